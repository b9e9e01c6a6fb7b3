-- A circuit breaker of the fleet opened (resilience4cata's shared breaker).
--
-- KEYS[1]  the Open key: exists while the fleet's breaker is open, expires with the Open
-- KEYS[2]  the half-open probe round of the previous Open, dropped so the next round starts at zero
-- ARGV[1]  how long the Open still lasts, in milliseconds (wait_in_open, less what has passed when
--          an Open decided while Redis was unreachable is published late)
-- ARGV[2]  the pub/sub channel every process of the fleet listens on
-- ARGV[3]  the message: "open <ms> <sender>"
--
-- Returns the number of processes the message reached.
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('DEL', KEYS[2])
return redis.call('PUBLISH', ARGV[2], ARGV[3])
