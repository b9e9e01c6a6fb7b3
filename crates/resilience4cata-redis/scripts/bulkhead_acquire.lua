-- Takes slots of a shared bulkhead (resilience4cata), at most max_concurrent_calls in the fleet.
--
-- KEYS[1]  a sorted set of slot leases: member "<process>:<n>", score = expiry (ms, Redis's TIME)
-- ARGV[1]  max_concurrent_calls (the fleet-wide cap)
-- ARGV[2]  slots wanted
-- ARGV[3]  lease_ttl in milliseconds
-- ARGV[4]  the caller's member prefix ("<process>:")
-- ARGV[5]  the number of the caller's first new member
--
-- Expired leases (a crashed process's) are dropped first. Returns the number of slots granted,
-- members ARGV[4]..ARGV[5], ARGV[4]..ARGV[5]+1, ...; zero when the fleet is full.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local granted = math.min(tonumber(ARGV[2]), tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1]))
if granted < 0 then granted = 0 end
for i = 0, granted - 1 do
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[4] .. (tonumber(ARGV[5]) + i))
end
redis.call('PEXPIRE', KEYS[1], ttl)
return granted
