--[[
  refusePlacement: a node refused to run a job for its placement. The job is read, or created from
  the spec when it is a missing occurrence (as its first beginRun would: include "spec"), so the
  refusal is visible on it. While it waits for a run (`queued` or `failed`): records the refusal
  as the job's `refused` field (JSON `{"node":…,"reason":…,"at":ms}`, the last one wins), counts
  t:unplaced and moves the job's outbox watch to now + reapAfterMs (XX: only an existing one), as
  a `limited` begin does. A running or finished job is left as it is.
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] metrics
    ARGV[1..9] the JobSpec (see include "spec")
    ARGV[10] the refusal as JSON, without `at` (`{"node":…,"reason":…}`)
    ARGV[11] reapAfterMs
  Output: the job's status ('' when it is missing: a submitted job that expired, nothing written)
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "job"
--@include "spec"

local id, key, job = jobFromArgv(KEYS[1], 1)
if not job then
  return ''
end
if job.status ~= 'queued' and job.status ~= 'failed' then
  return job.status
end
local now = nowMs()
redis.call('HSET', key, 'refused', jsonExtend(ARGV[10], '"at":' .. int(now)))
redis.call('ZADD', KEYS[2], 'XX', int(now + tonumber(ARGV[11])), id)
redis.call('HINCRBY', KEYS[3], 't:unplaced', 1)
return job.status
