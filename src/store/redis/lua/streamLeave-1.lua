--[[
  streamLeave: a consumer that stops leaves the group (include "streams"), but only when it holds
  no pending delivery: XGROUP DELCONSUMER discards a consumer's pending entries, so one that
  still holds some stays until they are taken over (and is then left for a later stop).
  Input:
    KEYS[1] root
    ARGV[1] the consumer's name
  Output: 1 when it left, else 0.
]]
--@include "streams"

local stream = streamKey(KEYS[1])
if redis.call('EXISTS', stream) == 0 then
  return 0
end
local ok, mine = pcall(redis.call, 'XPENDING', stream, STREAM_GROUP, '-', '+', 1, ARGV[1])
if not ok or #mine > 0 then
  return 0
end
redis.call('XGROUP', 'DELCONSUMER', stream, STREAM_GROUP, ARGV[1])
return 1
