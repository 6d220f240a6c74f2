--[[
  streamKeep: deliveries this consumer is still working on (handlers that run long) start their
  idle time over, so no worker takes them over as a stopped consumer's (XPENDING IDLE in
  streamMaintain takes only deliveries idle for claimIdleMs). Each is claimed again by its own
  consumer with JUSTID, which leaves its delivery count alone. An entry that is no longer pending,
  or that another consumer holds now (it took it over while this process was frozen), is left as
  it is.
  Input:
    KEYS[1] root
    ARGV[1] this consumer's name
    ARGV[2..] stream entry ids
  Output: the number kept (0 without the group: a FLUSHDB; the next read makes it again).
]]
--@include "streams"

local stream, consumer = streamKey(KEYS[1]), ARGV[1]
local kept = 0
local args = { stream, STREAM_GROUP, consumer, '0' }
for i = 2, #ARGV do
  local id = ARGV[i]
  local ok, pending = pcall(redis.call, 'XPENDING', stream, STREAM_GROUP, id, id, '1', consumer)
  if not ok then
    return 0
  end
  if pending[1] then
    args[#args + 1] = id
  end
  if #args == 504 or (i == #ARGV and #args > 4) then
    args[#args + 1] = 'JUSTID'
    kept = kept + #redis.call('XCLAIM', unpack(args))
    args = { stream, STREAM_GROUP, consumer, '0' }
  end
end
return kept
