-- Claims half-open probes of a shared circuit breaker, so that at most permitted_calls_in_half_open
-- probes run in the whole fleet per half-open round.
--
-- KEYS[1]  probes claimed so far in this round (expires with the round)
-- ARGV[1]  probes wanted by the caller
-- ARGV[2]  permitted_calls_in_half_open (the fleet-wide cap)
-- ARGV[3]  how long a round lasts, in milliseconds (wait_in_open)
--
-- Returns {granted, round_left_ms}. A value that is not a number counts as a full round.
local used = tonumber(redis.call('GET', KEYS[1]) or '0') or tonumber(ARGV[2])
local granted = math.min(tonumber(ARGV[1]), tonumber(ARGV[2]) - used)
if granted > 0 then
  if used == 0 then
    redis.call('SET', KEYS[1], granted, 'PX', ARGV[3])
  else
    redis.call('INCRBY', KEYS[1], granted)
  end
else
  granted = 0
end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  left = tonumber(ARGV[3])
end
return {granted, left}
