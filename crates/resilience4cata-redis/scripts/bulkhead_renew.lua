-- Renews a process's slot leases of a shared bulkhead for another lease_ttl.
--
-- KEYS[1]  the sorted set of slot leases (see bulkhead_acquire.lua)
-- ARGV[1]  lease_ttl in milliseconds
-- ARGV[2…] the caller's members
--
-- Returns the members that had already expired (they are not renewed: the caller lost them).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local lost = {}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[i])
  else
    table.insert(lost, ARGV[i])
  end
end
redis.call('PEXPIRE', KEYS[1], ttl)
return lost
