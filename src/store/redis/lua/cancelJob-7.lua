--[[
  cancelJob: `queued` -> `cancelled`, its outbox message and pending entry removed, the record
  retained jobMs; a concurrency slot it still names is released (a queued job holds none, but a
  slot is never left behind); counts t:cancelled (g:queued down if it was pending) and writes
  `job.cancelled`.
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
  Output:
    JOB_NOT_FOUND (-2)
    JSON text   {"ok":JobRecord} cancelled, or {"conflict":JobRecord} not queued any more
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "errors"
--@include "outbox"
--@include "job"
--@include "metrics"
--@include "events"

local root, id = KEYS[1], ARGV[1]
local key = jobKey(root, id)
local job = readJob(key)
if not job then
  return JOB_NOT_FOUND
end
if job.status ~= 'queued' then
  return '{"conflict":' .. jobJson(job) .. '}'
end
local now = nowMs()
job.status, job.finishedAt = 'cancelled', int(now)
redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
releaseSlot(key, id, job)
removeMessages(KEYS[2], KEYS[3], { id })
retainJob(root, KEYS[4], id, job, now, ARGV[2])
local m = newMetrics()
mAdd(m, 'g:queued', -redis.call('ZREM', KEYS[5], id))
mAdd(m, 't:cancelled', 1)
metricsFlush(KEYS[6], m)
emitEvent(KEYS[7], tonumber(ARGV[3]), jobEvent('job.cancelled', now, id, job))
return '{"ok":' .. jobJson(job) .. '}'
