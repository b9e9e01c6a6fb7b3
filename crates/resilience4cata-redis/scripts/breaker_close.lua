-- A circuit breaker of the fleet closed after successful half-open probes (resilience4cata's
-- shared breaker): the Open and its probe round are over for every process.
--
-- KEYS[1]  the Open key (dropped: a process that subscribes later does not open)
-- KEYS[2]  the probe round (dropped)
-- ARGV[1]  the pub/sub channel every process of the fleet listens on
-- ARGV[2]  the message: "closed <sender>"
--
-- Returns the number of processes the message reached.
redis.call('DEL', KEYS[1], KEYS[2])
return redis.call('PUBLISH', ARGV[1], ARGV[2])
