--[[
  deleteSchedule: delete a schedule and drop it from the due and listing indexes. Jobs it fired
  stay (with their runs index) until they expire; a running occurrence keeps its overlap lease
  until that lease expires.
  Input:
    KEYS[1] root
    KEYS[2] due index
    KEYS[3] schedules index
    ARGV[1] id
  Output: 1 deleted, 0 missing
]]
--@include "keys"

local id = ARGV[1]
local deleted = redis.call('DEL', scheduleKey(KEYS[1], id))
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[3], id)
return deleted
