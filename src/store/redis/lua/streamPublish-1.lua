--[[
  streamPublish: the streams transport's publish — put outbox messages on the Redis Streams queue
  (include "streams"): due ones on the stream, later ones in the delayed set.
  Input:
    KEYS[1] root
    ARGV    triples: member (the job id), notBefore ms, JobSpec JSON
  Output: the number of messages put.
]]
--@include "time"
--@include "streams"

local root = KEYS[1]
local now = nowMs()
for i = 1, #ARGV - 2, 3 do
  streamDispatch(root, ARGV[i], ARGV[i + 2], 0, tonumber(ARGV[i + 1]), now)
end
return #ARGV / 3
