--[[
  finishRun: record how an attempt ended, only if the job is `running` as that attempt.
  Success -> `succeeded` with the result (and no error); failure -> `failed` (back in the
  pending backlog, score now), or `dead` and listed in the dead-letter list when final.
  Releases the run lease, its concurrency slot and the schedule's overlap lease. Final records
  are retained jobMs.
  The attempt's watch (its outbox message, see beginRun) goes when the job is final; after a
  failure that will be retried it moves to now + reapAfterMs.
  A failure of a job with `cancelRequested` (cancelJob) -> `cancelled` (with the error), final
  whatever ARGV[6] says: t:cancelled and `job.cancelled`, no failure counted.
  A final job releases its waiting dependents (include "deps", ADR 0014).
  Counts (handler duration, failure average, totals, gauges) and writes `job.succeeded`,
  `job.failed` or `job.dead`. Then sweeps up to 20 expired jobs from the listing indexes
  (bounded housekeeping; the records themselves expire by TTL).
  Input:
    KEYS[1] root
    KEYS[2] expiring index
    KEYS[3] pending backlog
    KEYS[4] metrics
    KEYS[5] events
    KEYS[6] outbox
    KEYS[7] outbox messages
    ARGV[1] id
    ARGV[2] attempt
    ARGV[3] 1 success, 0 failure
    ARGV[4] result JSON ('' = none), on success
    ARGV[5] JobError JSON, on failure
    ARGV[6] 1 final failure (-> dead), 0 will retry
    ARGV[7] retention: `jobMs maxJobs maxRuns` (see include "job")
    ARGV[8] eventsMaxLen (0 = no events)
    ARGV[9] the event's error JSON ({name, message}), on failure
    ARGV[10] reapAfterMs
  Output:
    JOB_NOT_FOUND (-2)
    JSON text   {"ok":JobRecord} recorded, or {"stale":JobRecord} not running as that attempt
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "errors"
--@include "outbox"
--@include "job"
--@include "metrics"
--@include "events"
--@include "deps"

local root, expiring = KEYS[1], KEYS[2]
local pending, metrics, events = KEYS[3], KEYS[4], KEYS[5]
local id = ARGV[1]
local key = jobKey(root, id)
local job = readJob(key)
if not job then
  return JOB_NOT_FOUND
end
if job.status ~= 'running' or tonumber(job.attempts) ~= tonumber(ARGV[2]) then
  return '{"stale":' .. jobJson(job) .. '}'
end

local now = nowMs()
releaseRun(root, key, id, job)
job.finishedAt = int(now)
local m = newMetrics()
mAdd(m, 'g:running', -1)
mObserve(m, 'dur', math.max(0, now - tonumber(job.startedAt or now)))
local event
local released -- nil: no dependents to release; true / false: released as a success / failure
if ARGV[3] ~= '1' and job.cancelRequested then
  -- Asked to stop (cancelJob): cancelled, not a failure, never retried.
  mAdd(m, 't:cancelled', 1)
  job.status, job.error = 'cancelled', ARGV[5]
  redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'error', job.error)
  retainJob(root, expiring, id, job, now, ARGV[7])
  removeMessages(KEYS[6], KEYS[7], { id })
  event = jobEvent('job.cancelled', now, id, job)
  if job.dependents then
    released = false
  end
elseif ARGV[3] == '1' then
  mAverage(m, 'avg:fail', 0)
  mAdd(m, 't:succeeded', 1)
  local hadError = job.error
  job.status, job.error = 'succeeded', nil
  if hadError then
    redis.call('HDEL', key, 'error')
  end
  if ARGV[4] ~= '' then
    job.result = ARGV[4]
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'result', job.result)
  else
    if job.result then
      redis.call('HDEL', key, 'result')
    end
    job.result = nil
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
  end
  retainJob(root, expiring, id, job, now, ARGV[7])
  removeMessages(KEYS[6], KEYS[7], { id })
  event = jobEvent('job.succeeded', now, id, job)
  if job.dependents then
    released = true
  end
else
  mAverage(m, 'avg:fail', 1)
  mAdd(m, 't:failed', 1)
  job.error = ARGV[5]
  job.status = ARGV[6] == '1' and 'dead' or 'failed'
  redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'error', job.error)
  if job.status == 'dead' then
    mAdd(m, 't:dead', 1)
    redis.call('ZADD', dlqKey(root, jobTenant(job)), int(now), id)
    retainJob(root, expiring, id, job, now, ARGV[7])
    removeMessages(KEYS[6], KEYS[7], { id })
    if job.dependents then
      released = false
    end
  else
    mAdd(m, 'g:failed', 1)
    redis.call('ZADD', pending, int(now), id)
    deferWatch(KEYS[6], id, int(now + tonumber(ARGV[10])))
  end
  event = jobEvent('job.' .. job.status, now, id, job, '"attempt":' .. job.attempts
    .. ',"error":' .. ARGV[9])
end
metricsFlush(metrics, m)
emitEvent(events, tonumber(ARGV[8]), event)
if released ~= nil then
  releaseDependents({ root = root, outbox = KEYS[6], messages = KEYS[7], pending = pending,
    expiring = expiring, metrics = metrics, events = events, maxLen = tonumber(ARGV[8]),
    retention = ARGV[7], now = now }, id, released)
end

sweepExpired(root, expiring, now, 20)
return '{"ok":' .. jobJson(job) .. '}'
