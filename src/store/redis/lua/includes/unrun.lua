--[[
  Include "unrun": a delivered job that ends without running, shared by beginRun (include
  "begin") and refusePlacement. Both take beginRun's KEYS: KEYS[1] root, KEYS[2] outbox,
  KEYS[3] outbox messages, KEYS[4] expiring index, KEYS[5] pending backlog, KEYS[6] metrics,
  KEYS[7] events.

  leaveBacklog(m, id, job, status)
                         Takes the job, whose status is `status`, out of the pending backlog and
                         its gauges (metrics batch `m`).
  scheduleStopped(root, job)
                         Whether `job` is an occurrence that has not begun (attempts 0, no
                         attemptBase: not retried from the dead-letter list) whose schedule is
                         paused or missing: it is not to run.
  endUnrun(id, key, job, status, retention, maxLen, now, m)
                         The job ends `status` without running: `skipped` (an occurrence that
                         never started: its schedule's overlap lease is held, or the schedule was
                         paused or deleted before it began) or `cancelled` (a cancel asked for,
                         and the attempt's lease ran out before it finished). It leaves the
                         backlog, its outbox message goes, it is retained, counted (t:<status>)
                         and announced (job.<status>), and jobs waiting for it are released.
]]
--@include "time"
--@include "keys"
--@include "outbox"
--@include "job"
--@include "metrics"
--@include "events"
--@include "deps"

local function leaveBacklog(m, id, job, status)
  if status == 'queued' and job.onStream then
    -- Queued outside the index (a Streams submit due at once): nothing to remove there.
    mAdd(m, 's:out', 1)
    return
  end
  local removed = redis.call('ZREM', KEYS[5], id)
  if status == 'failed' then
    mAdd(m, 'g:failed', -1)
  elseif removed == 1 then
    mAdd(m, 'g:queued', -1)
  end
  if status == 'running' then
    mAdd(m, 'g:running', -1)
  end
end

local function scheduleStopped(root, job)
  if not job.scheduleId or job.attempts ~= '0' or job.attemptBase then
    return false
  end
  local status = redis.call('HGET', scheduleKey(root, job.scheduleId), 'status')
  return not status or status == 'paused'
end

local function endUnrun(id, key, job, status, retention, maxLen, now, m)
  local root, pending, metrics, events = KEYS[1], KEYS[5], KEYS[6], KEYS[7]
  leaveBacklog(m, id, job, job.status)
  job.status, job.finishedAt = status, int(now)
  redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
  releaseRun(root, key, id, job)
  removeMessages(KEYS[2], KEYS[3], { id })
  retainJob(root, KEYS[4], id, job, now, retention)
  mAdd(m, 't:' .. status, 1)
  emitEvent(events, maxLen, jobEvent('job.' .. status, now, id, job))
  -- Jobs waiting for it (it existed, queued, before: a refused placement or a held begin) are
  -- released as by a failure, as a submit after a skipped or cancelled dependency is.
  if job.dependents then
    releaseDependents({ root = root, outbox = KEYS[2], messages = KEYS[3], pending = pending,
      expiring = KEYS[4], metrics = metrics, events = events, maxLen = maxLen,
      retention = retention, now = now }, id, false)
  end
end
