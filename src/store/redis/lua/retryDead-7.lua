--[[
  retryDead: `dead` -> `queued` again (attempts kept, and recorded as attemptBase: the retry budget
  starts afresh from here; runAt = now, no longer retained), removed
  from the dead-letter list, with a message under a fresh dedup id `<id>~r<n>` in the
  outbox, n counting the job's dispatches from the dead-letter list (hash field `dispatches`).
  The job enters the pending backlog (score now); counts t:retried and g:queued and writes
  `job.retried`. A release of its dependents left over from its death in the previous version's
  form is given a set of its own first (include "deps").
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages
    KEYS[4] expiring index
    KEYS[5] pending backlog
    KEYS[6] metrics
    KEYS[7] events
    ARGV[1] id
    ARGV[2] id as a JSON string
    ARGV[3] recoverGraceMs
    ARGV[4] eventsMaxLen (0 = no events)
  Output:
    JOB_NOT_DEAD (-3)   missing or not dead
    JSON text           {"job":JobRecord,"message":OutboxMessage}
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

local root, id, idJson = KEYS[1], ARGV[1], ARGV[2]
local key = jobKey(root, id)
local job = readJob(key)
if not job or job.status ~= 'dead' then
  return JOB_NOT_DEAD
end
local now = nowMs()
redis.call('ZREM', dlqKey(root, jobTenant(job)), id)
keepJob(root, KEYS[4], id, job)
job.status, job.runAt, job.finishedAt = 'queued', int(now), nil
local dispatches = int((tonumber(redis.call('HGET', key, 'dispatches')) or 0) + 1)
job.attemptBase = job.attempts
redis.call('HSET', key, 'status', job.status, 'runAt', job.runAt, 'dispatches', dispatches,
  'attemptBase', job.attemptBase)
-- Queued again, it enters the backlog index below: no longer `onStream` (include "metrics").
-- A cancel asked of an attempt the queue then gave up on is spent: it does not cancel this one.
redis.call('HDEL', key, 'finishedAt', 'onStream', 'cancelRequested')
job.cancelRequested = nil
-- A release of its dependents its death left for later, in the form before such leftovers had a
-- set of their own (`0:<id>`, naming the live set): given one now, so what waits for this retry
-- is not released by the dead one's outcome (include "deps"). Only a job with dependents looks.
if job.dependents and redis.call('SREM', root .. ':deps:todo', '0:' .. id) == 1 then
  local kept = id .. '#' .. redis.call('INCR', root .. ':deps:seq')
  if redis.call('EXISTS', depsKey(root, id)) == 1 then
    redis.call('RENAME', depsKey(root, id), depsKey(root, kept))
  end
  redis.call('SADD', root .. ':deps:todo', '0:' .. kept)
  redis.call('ZADD', KEYS[2], 'NX', int(now), DEPS_TODO)
end

local recoverAt = int(now + tonumber(ARGV[3]))
local dedupJson = string.sub(idJson, 1, -2) .. '~r' .. dispatches .. '"'
local message = '{"id":' .. idJson .. ',"dedupId":' .. dedupJson .. ',"job":' .. specJson(job)
  .. ',"notBefore":' .. job.runAt .. ',"recoverAt":' .. recoverAt .. '}'
putMessage(KEYS[2], KEYS[3], id, recoverAt, message)
local m = newMetrics()
mAdd(m, 'g:queued', redis.call('ZADD', KEYS[5], job.runAt, id))
mAdd(m, 't:retried', 1)
metricsFlush(KEYS[6], m)
emitEvent(KEYS[7], tonumber(ARGV[4]), jobEvent('job.retried', now, id, job))
return '{"job":' .. jobJson(job) .. ',"message":' .. message .. '}'
