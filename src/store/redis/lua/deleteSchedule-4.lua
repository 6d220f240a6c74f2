--[[
  deleteSchedule: delete a schedule and drop it from the due and listing indexes. Jobs it fired
  stay (with their runs index) until they expire; a running occurrence keeps its overlap lease
  until that lease expires. Raises the rev sequence to the deleted rev, so a schedule re-created
  under this id starts above it.
  Input:
    KEYS[1] root
    KEYS[2] due index
    KEYS[3] schedules index
    KEYS[4] schedule rev sequence
    ARGV[1] id
  Output: 1 deleted, 0 missing
]]
--@include "keys"

local id = ARGV[1]
local key = scheduleKey(KEYS[1], id)
local rev = redis.call('HGET', key, 'rev')
if rev and tonumber(rev) > tonumber(redis.call('GET', KEYS[4]) or '0') then
  redis.call('SET', KEYS[4], rev)
end
local deleted = redis.call('DEL', key)
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[3], id)
return deleted
