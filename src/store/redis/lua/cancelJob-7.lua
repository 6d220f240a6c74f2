--[[
  cancelJob: `queued` (or `waiting`, ADR 0014) -> `cancelled`, its outbox message and pending
  entry removed, the record retained jobMs; a concurrency slot it still names is released (a queued job holds none, but a
  slot is never left behind); counts t:cancelled (its queued gauge down: include "metrics",
  leaveQueued) and writes
  `job.cancelled`.
  `running` under an unexpired run lease -> `requested`: the hash gets `cancelRequested` (the
  attempt's runner sees it and aborts; finishRun then records `cancelled`); nothing else changes.
  `running` with its run lease run out (nobody holds it) -> `cancelled` now, its run lease
  released (g:running down). Its waiting dependents are released as after a failure (include "deps").
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages
    KEYS[4] expiring index (zset: retained job -> expiry ms)
    KEYS[5] pending backlog
    KEYS[6] metrics
    KEYS[7] events
    ARGV[1] id
    ARGV[2] retention: `jobMs maxJobs maxRuns` (see include "job")
    ARGV[3] eventsMaxLen (0 = no events)
    ARGV[4] '1' when the store dispatches to Redis Streams: a delivery parked in the delayed set
            (include "streams") goes with the job, body and all, instead of staying counted
            there until its time
  Output:
    JOB_NOT_FOUND (-2)
    JSON text   {"ok":JobRecord} cancelled, {"requested":JobRecord} cancel asked of the running
                attempt, or {"conflict":JobRecord} finished, or failed and waiting for a retry
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

local root, id = KEYS[1], ARGV[1]
local key = jobKey(root, id)
local job = readJob(key)
if not job then
  return JOB_NOT_FOUND
end
local wasWaiting = job.status == 'waiting'
local wasRunning = job.status == 'running'
local now = nowMs()
if wasRunning and job.leaseUntil and tonumber(job.leaseUntil) > now then
  -- An attempt holds the run lease: ask it to stop; its finishRun records `cancelled`.
  if not job.cancelRequested then
    job.cancelRequested = '1'
    redis.call('HSET', key, 'cancelRequested', '1')
  end
  return jobJson(job, '{"requested":')
end
if job.status ~= 'queued' and not wasWaiting and not wasRunning then
  return jobJson(job, '{"conflict":')
end
job.status, job.finishedAt = 'cancelled', int(now)
redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
if wasRunning then
  releaseRun(root, key, id, job) -- its run lease ran out: nobody holds it
else
  releaseSlot(key, id, job)
end
removeMessages(KEYS[2], KEYS[3], { id })
if ARGV[4] == '1' and not wasWaiting then
  local stream = root .. ':q'
  if redis.call('ZREM', stream .. ':delayed', id) == 1 then
    redis.call('HDEL', stream .. ':bodies', id)
  end
end
retainJob(root, KEYS[4], id, job, now, ARGV[2])
local m = newMetrics()
if wasWaiting then
  redis.call('HDEL', key, 'waits', 'dispatch')
  mAdd(m, 'g:waiting', -1)
else
  local removed = redis.call('ZREM', KEYS[5], id)
  if wasRunning then
    mAdd(m, 'g:queued', -removed)
  else
    if removed == 0 then
      job.onStream = redis.call('HGET', key, 'onStream') or nil -- not among readJob's fields
    end
    leaveQueued(m, removed, job)
  end
end
if wasRunning then
  mAdd(m, 'g:running', -1)
end
mAdd(m, 't:cancelled', 1)
metricsFlush(KEYS[6], m)
emitEvent(KEYS[7], tonumber(ARGV[3]), jobEvent('job.cancelled', now, id, job))
if job.dependents then
  releaseDependents({ root = root, outbox = KEYS[2], messages = KEYS[3], pending = KEYS[5],
    expiring = KEYS[4], metrics = KEYS[6], events = KEYS[7], maxLen = tonumber(ARGV[3]),
    retention = ARGV[2], now = now }, id, false)
end
return jobJson(job, '{"ok":')
