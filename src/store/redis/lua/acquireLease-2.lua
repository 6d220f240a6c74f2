--[[
  acquireLease: take a named lease if it is free, with a fresh fencing token.
  Input:
    KEYS[1] lease key (string: token, with a TTL)
    KEYS[2] lease sequence (string, INCR)
    ARGV[1] ttlMs
  Output:
    {1, token}         acquired
    {0, remainingMs}   held by someone else
]]
local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then
  return { 0, math.max(pttl, 0) }
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token, 'PX', ARGV[1])
return { 1, token }
