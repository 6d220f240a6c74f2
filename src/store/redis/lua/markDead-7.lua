--[[
  markDead: the queue gave up on a delivery. Creates the job from the spec if missing and it has
  a scheduleId (else returns null, removing a leftover outbox message); unless it is already dead,
  succeeded, cancelled or skipped, its runAt differs from the spec's (a callback for an earlier
  dispatch), its attempts differ from ARGV[14] when given (the reaper's watch is out of date),
  or it is running with an unexpired run lease (then returned unchanged, nothing counted), marks
  it `dead` with the error, lists it in the dead-letter list, releases its run leases and its
  concurrency slot, drops its
  outbox message and its pending entry, retains the record jobMs, counts t:dead (and the gauge
  it leaves) and writes `job.dead`. Its waiting dependents are released as after a failure
  (include "deps", ADR 0014).
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages
    KEYS[4] expiring index
    KEYS[5] pending backlog
    KEYS[6] metrics
    KEYS[7] events
    ARGV[1..9] the JobSpec (see include "spec")
    ARGV[10] JobError JSON
    ARGV[11] retention: `jobMs maxJobs maxRuns` (see include "job")
    ARGV[12] eventsMaxLen (0 = no events)
    ARGV[13] the event's error JSON ({name, message})
    ARGV[14] expected attempts ('' = any)
    ARGV[15] delivery token id of the failure callback ('' = none): a token seen before is a
             replay -> the job as it is (or `null`), nothing written or counted
    ARGV[16] delivery token expiry (ms)
  Output: JobRecord JSON text, or `null`
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "outbox"
--@include "job"
--@include "spec"
--@include "metrics"
--@include "events"
--@include "deps"

local root = KEYS[1]
local now = nowMs()
if not firstUse(root, ARGV[15], ARGV[16], now) then
  local current = readJob(jobKey(root, ARGV[1]))
  return current and jobJson(current) or 'null'
end
local id, key, job = jobFromArgv(root, 1)
if not job then
  -- Finished and expired: a leftover message (a watch) has nothing left to do.
  removeMessages(KEYS[2], KEYS[3], { id })
  return 'null'
end
if job.status == 'dead' or job.status == 'succeeded' or job.status == 'cancelled'
  or job.status == 'skipped' or tonumber(job.runAt) ~= tonumber(ARGV[4])
  or (ARGV[14] ~= '' and tonumber(job.attempts) ~= tonumber(ARGV[14])) then
  return jobJson(job)
end
if job.status == 'running' and job.leaseUntil and tonumber(job.leaseUntil) > now then
  return jobJson(job)
end
local m = newMetrics()
local removed = redis.call('ZREM', KEYS[5], id)
if job.status == 'failed' then
  mAdd(m, 'g:failed', -1)
elseif job.status == 'running' then
  mAdd(m, 'g:running', -1)
end
if job.status == 'queued' then
  leaveQueued(m, removed, job)
elseif removed == 1 and job.status ~= 'failed' then
  mAdd(m, 'g:queued', -1)
end
mAdd(m, 't:dead', 1)
releaseRun(root, key, id, job)
removeMessages(KEYS[2], KEYS[3], { id })
job.status, job.finishedAt, job.error = 'dead', int(now), ARGV[10]
redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'error', job.error)
redis.call('ZADD', dlqKey(root, jobTenant(job)), job.finishedAt, id)
retainJob(root, KEYS[4], id, job, now, ARGV[11])
metricsFlush(KEYS[6], m)
emitEvent(KEYS[7], tonumber(ARGV[12]), jobEvent('job.dead', now, id, job,
  '"attempt":' .. job.attempts .. ',"error":' .. ARGV[13]))
if job.dependents then
  releaseDependents({ root = root, outbox = KEYS[2], messages = KEYS[3], pending = KEYS[5],
    expiring = KEYS[4], metrics = KEYS[6], events = KEYS[7], maxLen = tonumber(ARGV[12]),
    retention = ARGV[11], now = now }, id, false)
end
return jobJson(job)
