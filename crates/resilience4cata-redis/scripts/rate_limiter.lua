-- Fleet-wide GCRA lease for resilience4cata's shared rate limiter, decided on Redis's own clock.
--
-- KEYS[1]  the limiter's theoretical arrival time (TAT), microseconds since the epoch by TIME
-- ARGV[1]  emission interval T: microseconds per permit (period / permits, rounded up)
-- ARGV[2]  burst tolerance: lease x T (the fleet saves up at most one lease while idle)
-- ARGV[3]  permits wanted (one lease, or what tops the caller's pool up to one)
--
-- Grants as many of the wanted permits as conform now (possibly fewer, possibly none) and moves
-- the TAT by T per permit granted. Returns {granted, retry_after_us}: retry_after_us is the wait
-- until the next permit conforms when none was granted, else 0. A missing key is an idle limiter;
-- a value that is not a number is treated as one and overwritten; a TAT further ahead than the
-- tolerance (garbage) is clamped. The key expires once the TAT has passed, plus a second.
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
if tat > now + tolerance then tat = now + tolerance end
local granted = math.min(wanted, math.floor((now + tolerance - tat) / interval))
if granted <= 0 then
  return {0, tat + interval - tolerance - now}
end
tat = tat + granted * interval
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
return {granted, 0}
