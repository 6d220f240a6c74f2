--[[
  streamAck: deliveries done with (run, or nothing left to run) leave the queue: XACK and XDEL, so
  the stream holds only deliveries not read yet or still pending.
  Input:
    KEYS[1] root
    ARGV    stream entry ids
  Output: the number acknowledged.
]]
--@include "streams"

local stream = streamKey(KEYS[1])
local acked = 0
for i = 1, #ARGV, 500 do
  local ids = { unpack(ARGV, i, math.min(i + 499, #ARGV)) }
  acked = acked + redis.call('XACK', stream, STREAM_GROUP, unpack(ids))
  redis.call('XDEL', stream, unpack(ids))
end
return acked
