--[[
  streamHandOver: a worker that stops hands the next delayed time to the others (include
  "streams"): a wake-up reaches one consumer only, so the one that read the last wake-up may be
  the only one that knows when the earliest delayed delivery is due. XADDs a wake-up for it when
  the delayed set is not empty.
  Input:
    KEYS[1] root
  Output: 1 when a wake-up was added, else 0.
]]
--@include "streams"

local stream = streamKey(KEYS[1])
local first = redis.call('ZRANGE', stream .. ':delayed', 0, 0, 'WITHSCORES')
if first[2] then
  redis.call('XADD', stream, '*', 'w', first[2])
  return 1
end
return 0
