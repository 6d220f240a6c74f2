--[[
  deleteSchedule: delete a schedule, its runs index, and drop it from the due and listing indexes.
  Jobs it fired stay until they expire (listed by id and in the tenant's job listing, no longer as
  runs of this id: a schedule re-created under it starts with none). Its overlap lease goes too: a
  running occurrence of the deleted schedule must not skip the occurrences of one re-created under
  the id (that run's end removes the lease only while it holds it). Raises the rev sequence to
  the deleted rev, so a schedule re-created under this id starts above it.
  Input:
    KEYS[1] root
    KEYS[2] due index
    KEYS[3] schedule rev sequence
    ARGV[1] id
  Output: 1 deleted, 0 missing
]]
--@include "keys"
--@include "schedule"

local id = ARGV[1]
local key = scheduleKey(KEYS[1], id)
local stored = redis.call('HMGET', key, 'rev', 'def')
local rev = stored[1]
if not rev then
  return 0
end
if tonumber(rev) > tonumber(redis.call('GET', KEYS[3]) or '0') then
  redis.call('SET', KEYS[3], rev)
end
redis.call('DEL', key, runsKey(KEYS[1], id), scheduleRunningKey(KEYS[1], id))
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', schedulesKey(KEYS[1], scheduleTenant(stored[2], id)), id)
return 1
