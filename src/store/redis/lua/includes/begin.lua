--[[
  Include "begin": beginRun's decision for one delivery (the script beginRun-7 documents it),
  shared by beginRun (one delivery) and beginRuns (several in one call, same KEYS).

  beginRunAt(a, n, retention, maxLen, now, m)
                         The delivery whose arguments are ARGV[a + 1 .. a + n] (beginRun's
                         delivery arguments; those past n read as ''), with the store's
                         retention text and events cap (a number), at `now`; its metrics go into
                         the batch `m`, which the caller flushes. Answers beginRun's JSON text.
]]
--@include "time"
--@include "args"
--@include "keys"
--@include "json"
--@include "outbox"
--@include "job"
--@include "spec"
--@include "metrics"
--@include "events"
--@include "deps"
--@include "unrun"

-- A delivery told to wait, sent again once the reason has gone: how long the queue waits (ms)
-- before asking with a delivery of its own.
local REPLAYED_WAIT_MS = 1000

local function beginRunAt(a, n, retention, maxLen, now, m)
  local root, events = KEYS[1], KEYS[7]
  local token = argAt(a, n, 13)
  local used = tokenUse(root, token)
  if used then
    -- Never a second run. If the attempt this delivery began still runs under its lease (its
    -- answer may have been lost, the queue will ask again), say busy rather than done. A delivery
    -- first told to wait (`b`: busy or limited) is told to wait again: "done" would stop the
    -- queue asking for a job that has not run (a client re-sending the request after a lost
    -- answer gets this).
    local current = readJob(jobKey(root, ARGV[a + 1]))
    local leaseUntil = current and current.status == 'running' and tonumber(current.leaseUntil or '')
    if leaseUntil and leaseUntil > now and (used == 'b' or current.attempts == used) then
      return '{"kind":"busy","retryAfterMs":' .. int(leaseUntil - now) .. '}'
    end
    if used == 'b' then
      return '{"kind":"busy","retryAfterMs":' .. REPLAYED_WAIT_MS .. '}'
    end
    return '{"kind":"replayed"}'
  end
  -- Every answer records the token: a later use of it is recognised (and never runs).
  local function remember(value)
    rememberToken(root, token, argAt(a, n, 14), now, value)
  end
  local id, key, job = jobFromArgv(root, a + 1)
  if not job then
    -- Finished and expired: a leftover message (a re-dispatch) has nothing left to do.
    removeMessages(KEYS[2], KEYS[3], { id })
    remember('-')
    return '{"kind":"missing"}'
  end

  -- It ends here without running (include "unrun"); answers beginRun's `kind` `kind` with it.
  local function unrun(status, kind)
    endUnrun(id, key, job, status, retention, maxLen, now, m)
    remember('-')
    return jobJson(job, '{"kind":"' .. kind .. '","job":')
  end

  if FINAL_STATUSES[job.status] then
    removeMessages(KEYS[2], KEYS[3], { id })
    leaveBacklog(m, id, job, job.status)
    remember('-')
    return jobJson(job, '{"kind":"final","job":')
  end
  if job.status == 'running' and job.leaseUntil and tonumber(job.leaseUntil) > now then
    remember('b')
    return '{"kind":"busy","retryAfterMs":' .. int(tonumber(job.leaseUntil) - now) .. '}'
  end
  if job.status == 'running' and job.cancelRequested then
    -- A cancel was asked for and the attempt's lease ran out before it finished: it ends here.
    return unrun('cancelled', 'final')
  end

  if scheduleStopped(root, job) then
    -- Not begun when its schedule was paused or deleted: not run.
    return unrun('skipped', 'skipped')
  end

  local leaseMs = numberOf(ARGV[a + 10])
  -- '' (Redis Streams): no outbox watch over the attempt (docs/adr/0033-no-watch-on-streams.md).
  local reapAfterMs = numberOf(argAt(a, n, 11))
  local running
  if job.overlap == 'skip' and job.scheduleId then
    running = scheduleRunningKey(root, job.scheduleId)
    local holder = redis.call('GET', running)
    -- Held by a run that has ended without handing it on (one begun under another policy and
    -- ended by an older version, include "job" leaseToRunning): handed on now, or free.
    if holder and holder ~= id and redis.call('HGET', jobKey(root, holder), 'status') ~= 'running' then
      holder = leaseToRunning(root, job.scheduleId, id, now)
    end
    if holder and holder ~= id then
      if numberOf(job.attempts) > 0 then
        local ttl = redis.call('PTTL', running)
        remember('b')
        return '{"kind":"busy","retryAfterMs":' .. math.max(ttl, 0) .. '}'
      end
      return unrun('skipped', 'skipped')
    end
  end

  -- The concurrency limit: a slot per running job of the key, held until its lease ends.
  local limit, slots, waitMs = tonumber(argAt(a, n, 15)), nil, nil
  if limit then
    slots = limitKey(root, argAt(a, n, 16))
    redis.call('ZREMRANGEBYSCORE', slots, '-inf', int(now))
    if not redis.call('ZSCORE', slots, id) and redis.call('ZCARD', slots) >= limit then
      local first = redis.call('ZRANGE', slots, 0, 0, 'WITHSCORES')
      waitMs = math.max(250, tonumber(first[2]) - now)
    end
  end
  -- The rate limit: the starts of the key's runs in the last period. Judged even when the slot
  -- refused (the answer waits for both); neither limit takes anything unless both admit.
  local rate, window, period = tonumber(argAt(a, n, 17)), nil, nil
  if rate then
    period = tonumber(argAt(a, n, 18))
    window = rateKey(root, argAt(a, n, 19))
    redis.call('ZREMRANGEBYSCORE', window, '-inf', int(now - period))
    local count = redis.call('ZCARD', window)
    if count >= rate then
      -- The start whose leaving brings the window below the limit (the oldest, at exactly `rate`).
      local leaving = redis.call('ZRANGE', window, count - rate, count - rate, 'WITHSCORES')
      waitMs = math.max(waitMs or 0, 250, tonumber(leaving[2]) + period - now)
    end
  end
  if waitMs then
    if reapAfterMs then
      -- Alive, only waiting: the watch waits too, from when the queue is told to come back.
      redis.call('ZADD', KEYS[2], 'XX', int(now + waitMs + reapAfterMs), id)
    end
    if job.attempts == '0' and not job.limitedAt then
      -- Its first start will count lag only up to here: the wait its handler's own limit
      -- imposes is not the deployment's dispatch lag (which the degradation controller reads).
      redis.call('HSET', key, 'limitedAt', int(now))
    end
    mAdd(m, 't:limited', 1)
    remember('b')
    return '{"kind":"limited","retryAfterMs":' .. int(waitMs) .. '}'
  end
  if running then
    redis.call('SET', running, id, 'PX', leaseMs)
  end

  leaveBacklog(m, id, job, job.status)
  local finished = job.finishedAt
  job.status, job.startedAt, job.finishedAt = 'running', int(now), nil
  local attempt = numberOf(job.attempts) + 1
  job.attempts = attempt == 1 and '1' or int(attempt)
  local leaseEnd = int(now + leaseMs)
  if job.slot and job.slot ~= slots then
    -- Its limit key changed since an attempt whose lease ran out: that slot is not this run's.
    redis.call('ZREM', job.slot, id)
  end
  local fields = { 'status', job.status, 'attempts', job.attempts, 'startedAt', job.startedAt,
    'leaseUntil', leaseEnd }
  if slots then
    redis.call('ZADD', slots, leaseEnd, id)
    fields[#fields + 1], fields[#fields + 2] = 'slot', slots
  end
  local node, before = argAt(a, n, 12), job.node
  if node ~= '' then
    fields[#fields + 1], fields[#fields + 2] = 'node', node
    job.node = node
  else
    job.node = nil
  end
  redis.call('HSET', key, unpack(fields))
  -- What the attempt before left that this one does not have: one HDEL, when anything.
  local stale = {}
  if finished then
    stale[#stale + 1] = 'finishedAt'
  end
  if job.slot and not slots then
    stale[#stale + 1] = 'slot'
  end
  if before and node == '' then
    stale[#stale + 1] = 'node'
  end
  if job.limitedAt then
    stale[#stale + 1] = 'limitedAt'
  end
  if #stale > 0 then
    redis.call('HDEL', key, unpack(stale))
  end
  if window then
    redis.call('ZADD', window, int(now), id .. ':' .. job.attempts)
    redis.call('PEXPIRE', window, int(period))
  end
  if reapAfterMs then
    putWatch(KEYS[2], KEYS[3], id, job, int(now + leaseMs + reapAfterMs))
  else
    -- No watches (Redis Streams): the group's pending list stands watch. A message the job may
    -- still have (an occurrence's attempt-0 watch) goes.
    removeMessages(KEYS[2], KEYS[3], { id })
  end
  remember(job.attempts)
  mAdd(m, 't:started', 1)
  mAdd(m, 'g:running', 1)
  if job.attempts == '1' then
    -- From when the job was both stored and due: a run time before its submit (or an
    -- occurrence stored after its fire time) counts no time it was not queued.
    -- Up to its first `limited` answer, if its handler's limit held it (see above).
    local startedBy = job.limitedAt and math.min(now, tonumber(job.limitedAt)) or now
    local lag = math.max(0, startedBy - math.max(tonumber(job.runAt), tonumber(job.createdAt)))
    mObserve(m, 'lag', lag)
    mAverage(m, 'avg:lag', lag)
  end
  emitEvent(events, maxLen, jobEvent('job.started', now, id, job, '"attempt":' .. job.attempts))
  return jobJson(job, '{"kind":"run","attempt":' .. job.attempts .. ',"job":')
end
