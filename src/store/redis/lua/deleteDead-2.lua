--[[
  deleteDead: remove a job from the dead-letter list and delete it (and its index entries),
  leaving a tombstone for jobMs: a late or replayed delivery of it does not bring it back.
  Input:
    KEYS[1] root
    KEYS[2] expiring index
    ARGV[1] id
    ARGV[2] jobMs (retention)
  Output: 1 deleted, 0 not in the dead-letter list
]]
--@include "keys"
--@include "job"

local root, id = KEYS[1], ARGV[1]
local key = jobKey(root, id)
local job = readJob(key)
if not job or redis.call('ZREM', dlqKey(root, jobTenant(job)), id) == 0 then
  return 0
end
if job.status ~= 'dead' then
  -- A stale entry (a late delivery made the job again since): it goes, the job stays.
  return 0
end
redis.call('ZREM', jobsKey(root, jobTenant(job)), id)
redis.call('DEL', key)
redis.call('SET', goneKey(root, id), '1', 'PX', ARGV[2])
redis.call('ZREM', KEYS[2], expiringMember(id, job))
if job.scheduleId then
  redis.call('ZREM', runsKey(root, job.scheduleId), id)
end
return 1
