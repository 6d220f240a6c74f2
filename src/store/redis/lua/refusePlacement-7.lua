--[[
  refusePlacement: a node refused to run a job for its placement. The job is read, or created from
  the spec when it is a missing occurrence (as its first beginRun would: include "spec"), so the
  refusal is visible on it. While it waits for a run (`queued` or `failed`): records the refusal
  as the job's `refused` field (JSON `{"node":…,"reason":…,"at":ms}`, the last one wins), counts
  t:unplaced and moves the job's outbox watch to now + reapAfterMs (XX: only an existing one), as
  a `limited` begin does. An occurrence that has not begun and whose schedule is paused or
  missing ends `skipped` instead, as its beginRun would end it (include "unrun"): no node would
  run it, and a refusal would hand it back for as long as no node matches. A running or finished
  job is left as it is.
  Input:
    KEYS as beginRun's: KEYS[1] root, KEYS[2] outbox, KEYS[3] outbox messages, KEYS[4] expiring
    index, KEYS[5] pending backlog, KEYS[6] metrics, KEYS[7] events
    ARGV[1..9] the JobSpec (see include "spec")
    ARGV[10] the refusal as JSON, without `at` (`{"node":…,"reason":…}`)
    ARGV[11] reapAfterMs
    ARGV[12] retention, ARGV[13] eventsMaxLen (as beginRun's ARGV[1], ARGV[2])
  Output: the job's status ('' when it is missing: a submitted job that expired, nothing written)
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "job"
--@include "spec"
--@include "metrics"
--@include "unrun"

local id, key, job = jobFromArgv(KEYS[1], 1)
if not job then
  return ''
end
if job.status ~= 'queued' and job.status ~= 'failed' then
  return job.status
end
local now = nowMs()
if scheduleStopped(KEYS[1], job) then
  local m = newMetrics()
  endUnrun(id, key, job, 'skipped', ARGV[12], numberOf(ARGV[13]), now, m)
  metricsFlush(KEYS[6], m)
  return job.status
end
redis.call('HSET', key, 'refused', jsonExtend(ARGV[10], '"at":' .. int(now)))
redis.call('ZADD', KEYS[2], 'XX', int(now + tonumber(ARGV[11])), id)
redis.call('HINCRBY', KEYS[6], 't:unplaced', 1)
return job.status
