--[[
  deleteDead: remove a job from the dead-letter list and delete it (and its index entries).
  Input:
    KEYS[1] root
    KEYS[2] dead-letter list
    KEYS[3] jobs index
    KEYS[4] expiring index
    ARGV[1] id
  Output: 1 deleted, 0 not in the dead-letter list
]]
--@include "keys"
--@include "job"

local root, id = KEYS[1], ARGV[1]
if redis.call('ZREM', KEYS[2], id) == 0 then
  return 0
end
local key = jobKey(root, id)
local job = readJob(key)
redis.call('ZREM', KEYS[3], id)
if job then
  redis.call('DEL', key)
  redis.call('ZREM', KEYS[4], expiringMember(id, job))
  if job.scheduleId then
    redis.call('ZREM', runsKey(root, job.scheduleId), id)
  end
end
return 1
