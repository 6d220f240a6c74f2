--[[
  streamLeave: a consumer that stops leaves the group (include "streams"), but only when it holds
  no pending delivery: XGROUP DELCONSUMER discards a consumer's pending entries, so one that
  still holds some stays until they are taken over (and is then left for a later stop).
  It also deletes the other consumers that hold nothing and have not read for ARGV[2] ms
  (forgetConsumers, include "streams"): those of processes killed while they held nothing.
  Input:
    KEYS[1] root
    ARGV[1] the consumer's name
    ARGV[2] min idle ms of another consumer to delete (absent = delete none)
  Output: 1 when it left, else 0.
]]
--@include "streams"

local stream = streamKey(KEYS[1])
if redis.call('EXISTS', stream) == 0 then
  return 0
end
if ARGV[2] then
  forgetConsumers(stream, ARGV[1], tonumber(ARGV[2]))
end
local ok, mine = pcall(redis.call, 'XPENDING', stream, STREAM_GROUP, '-', '+', 1, ARGV[1])
if not ok or #mine > 0 then
  return 0
end
redis.call('XGROUP', 'DELCONSUMER', stream, STREAM_GROUP, ARGV[1])
return 1
