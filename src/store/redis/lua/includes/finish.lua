--[[
  Include "finish": finishRun's recording of one attempt's end (the script finishRun-7
  documents it), shared by finishRun (one attempt) and finishRuns (several in one call, same
  KEYS).

  finishRunAt(a, n, retention, maxLen, now, m)
                          The attempt whose arguments are ARGV[a + 1 .. a + n] (finishRun's
                          attempt arguments; those past n read as ''), with the store's retention
                          text and events cap (a number); `now` is read when nil and only when
                          the attempt is recorded. Its metrics go into the batch `m`, which the
                          caller flushes. Answers finishRun's output and, when recorded, the time
                          it used (the caller sweeps expired jobs then).
]]
--@include "time"
--@include "args"
--@include "keys"
--@include "json"
--@include "errors"
--@include "outbox"
--@include "job"
--@include "metrics"
--@include "events"
--@include "deps"

local function finishRunAt(a, n, retention, maxLen, now, m)
  local root, expiring = KEYS[1], KEYS[2]
  local pending, metrics, events = KEYS[3], KEYS[4], KEYS[5]
  local id = ARGV[a + 1]
  local key = jobKey(root, id)
  local job = readWholeJob(key)
  if not job then
    return JOB_NOT_FOUND
  end
  if job.status ~= 'running' or numberOf(job.attempts) ~= numberOf(ARGV[a + 2]) then
    return jobJson(job, '{"stale":')
  end

  now = now or nowMs()
  -- reapAfterMs '' (Redis Streams): the attempt has no watch to remove or defer (begin-run
  -- removed the job's message).
  local reapAfterMs = argAt(a, n, 8)
  local watched = reapAfterMs ~= ''
  releaseRun(root, key, id, job)
  job.finishedAt = int(now)
  mAdd(m, 'g:running', -1)
  mObserve(m, 'dur', math.max(0, now - tonumber(job.startedAt or now)))
  local event
  local released -- nil: no dependents to release; true / false: released as a success / failure
  -- '2': a success whose caller does not read the job back (answered {"recorded":true}).
  local outcome = ARGV[a + 3]
  local ok = outcome == '1' or outcome == '2'
  if not ok and job.cancelRequested then
    -- Asked to stop (cancelJob): cancelled, not a failure, never retried.
    mAdd(m, 't:cancelled', 1)
    job.status, job.error = 'cancelled', argAt(a, n, 6)
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'error', job.error)
    retainJob(root, expiring, id, job, now, retention)
    if watched then
      removeMessages(KEYS[6], KEYS[7], { id })
    end
    event = jobEvent('job.cancelled', now, id, job)
    if job.dependents then
      released = false
    end
  elseif ok then
    mAverage(m, 'avg:fail', 0)
    mAdd(m, 't:succeeded', 1)
    local hadError = job.error
    job.status, job.error = 'succeeded', nil
    if hadError then
      redis.call('HDEL', key, 'error')
    end
    local result = argAt(a, n, 4)
    if result ~= '' then
      job.result = result
      redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'result', job.result)
    else
      if job.result then
        redis.call('HDEL', key, 'result')
      end
      job.result = nil
      redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
    end
    retainJob(root, expiring, id, job, now, retention)
    if watched then
      removeMessages(KEYS[6], KEYS[7], { id })
    end
    event = jobEvent('job.succeeded', now, id, job)
    if job.dependents then
      released = true
    end
  else
    mAverage(m, 'avg:fail', 1)
    mAdd(m, 't:failed', 1)
    job.error = argAt(a, n, 6)
    job.status = argAt(a, n, 5) == '1' and 'dead' or 'failed'
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'error', job.error)
    if job.status == 'dead' then
      mAdd(m, 't:dead', 1)
      redis.call('ZADD', dlqKey(root, jobTenant(job)), int(now), id)
      retainJob(root, expiring, id, job, now, retention)
      if watched then
        removeMessages(KEYS[6], KEYS[7], { id })
      end
      if job.dependents then
        released = false
      end
    else
      mAdd(m, 'g:failed', 1)
      redis.call('ZADD', pending, int(now), id)
      if watched then
        deferWatch(KEYS[6], id, int(now + tonumber(reapAfterMs)))
      end
    end
    event = jobEvent('job.' .. job.status, now, id, job, '"attempt":' .. job.attempts
      .. ',"error":' .. argAt(a, n, 7))
  end
  emitEvent(events, maxLen, event)
  if released ~= nil then
    releaseDependents({ root = root, outbox = KEYS[6], messages = KEYS[7], pending = pending,
      expiring = expiring, metrics = metrics, events = events, maxLen = maxLen,
      retention = retention, now = now }, id, released)
  end

  if outcome == '2' and job.status == 'succeeded' then
    return '{"recorded":true}', now
  end
  return jobJson(job, '{"ok":'), now
end
