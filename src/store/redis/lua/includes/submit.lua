--[[
  Include "submit": submitJob's decision and writes for one job (the script submitJob-7
  documents them, its arguments and its answers), shared by submitJob (one job) and submitJobs
  (the submits a server made at once, in one call; same KEYS).

  submitStart()          Starts a call's submits: nothing counted, no level read.
  submitAt(a, n, now)    The submit whose arguments are ARGV[a + 1 .. a + n] (submitJob's
                         ARGV[1 .. n]; those past n read as ''), at `now`. Answers submitJob's
                         JSON text.
  submitFlush()          Adds the counters of the call's submits so far to the metrics hash
                         (KEYS[5]): an HINCRBY per counter that moved.

  Within a call each submit is decided as it would be alone, in order, at the same `now`: its
  counters are added at the end (or before a degradation evaluation, which reads them), and a
  level read once is reused by the next submits of the same degradation settings while those
  reuse a stored level at all (evaluateEveryMs > 0): at the same `now` they would read back the
  level the first one read or stored.

  What a call's submits share is kept in this include's locals, not in tables: a function
  library keeps them between calls (submitStart resets them), and a table made per call costs
  Redis its collection (docs/adr/0043-submits-in-groups.md).
]]
--@include "time"
--@include "args"
--@include "keys"
--@include "json"
--@include "outbox"
--@include "job"
--@include "metrics"
--@include "events"
--@include "degrade"
--@include "quota"
--@include "streams"
--@include "deps"
--@include "settings"

-- The counters of the call's submits not yet added, and the last degradation level read (for
-- the settings text levelText).
local submitted, queued, streamed = 0, 0, 0
local levelText, levelRead

local function submitStart()
  submitted, queued, streamed = 0, 0, 0
  levelText, levelRead = nil, nil
end

-- A count as HINCRBY takes it: a number argument is formatted by Redis, and 1 is the usual one.
local function countText(count)
  return count == 1 and '1' or int(count)
end

local function submitFlush()
  local metrics = KEYS[5]
  if submitted > 0 then
    redis.call('HINCRBY', metrics, 't:submitted', countText(submitted))
  end
  if queued > 0 then
    redis.call('HINCRBY', metrics, 'g:queued', countText(queued))
  end
  if streamed > 0 then
    redis.call('HINCRBY', metrics, 's:in', countText(streamed))
  end
  submitted, queued, streamed = 0, 0, 0
end

-- The degradation level for the settings text `text` (parsed as `admission`) at `now`; an
-- evaluation's event goes to a stream capped at maxLen.
local function admissionLevel(text, admission, maxLen, now)
  local root, pending, metrics, events = KEYS[1], KEYS[4], KEYS[5], KEYS[6]
  if levelText == text then
    return levelRead
  end
  local level = storedLevel(KEYS[7], now, admission.everyMs)
  if not level then
    -- The evaluation reads the counters: the call's so far are written first.
    submitFlush()
    local known = metricsLoad(metrics, { 'avg:lag', 'avg:fail', 's:in', 's:out', 'g:running' })
    local depth = dueBacklog(root, pending, metrics, known, now)
    level = evaluateDegradation(KEYS[7], events, maxLen, parsePolicy(admission.policy), depth,
      known['avg:lag'], known['avg:fail'], now, known['g:running'])
  end
  if admission.everyMs > 0 then
    levelText, levelRead = text, level
  end
  return level
end

-- A webhook delivery (the submit's ARGV[a + 21 .. a + 23]): counted and listed in the
-- endpoint's history as `outcome` (written or replayed), for the job jobId.
local function recordHook(a, n, now, outcome, jobId)
  local hook = argAt(a, n, 21)
  if hook == '' then
    return
  end
  local root = KEYS[1]
  redis.call('HINCRBY', hookCountsKey(root), outcome .. ':' .. hook, '1')
  local entry = '{"at":' .. int(now)
  if argAt(a, n, 22) ~= '' then
    entry = entry .. ',"eventId":' .. jsonString(argAt(a, n, 22))
  end
  local log = hookLogKey(root, hook)
  redis.call('LPUSH', log, entry .. ',"outcome":"' .. outcome .. '","jobId":' .. jsonString(jobId)
    .. '}')
  redis.call('LTRIM', log, 0, tonumber(argAt(a, n, 23)) - 1)
end

-- A refused submit gives back its listing entry (include "job": takeListing); answers `answer`.
local function refused(listing, id, answer)
  redis.call('ZREM', listing, id)
  return answer
end

-- The dependencies named in `text` (job ids separated by spaces) of a job of `tenant`
-- (docs/adr/0014-job-dependencies.md): the answer `{"unknown":[…]}` when some name no job of the tenant; else nil,
-- the unfinished ones (nil when none) and whether one failed while the job is cancelled on a
-- failure (not runOnFailure). No table is made for a job without dependencies. An id named
-- twice counts once: a dependency releases its dependent once, so a second count would keep the
-- job waiting for ever (the broker de-duplicates `after`, the store does not rely on it).
local function checkDependencies(root, tenant, text, runOnFailure)
  local unknown, unfinished, depFailed
  local seen = {}
  for dep in string.gmatch(text, '%S+') do
    if not seen[dep] then
      seen[dep] = true
      local f = redis.call('HMGET', jobKey(root, dep), 'status', 'tenant')
      if not f[1] or (f[2] or 'default') ~= tenant then
        unknown = unknown or {}
        unknown[#unknown + 1] = jsonString(dep)
      elseif f[1] == 'succeeded' then
        -- satisfied
      elseif FINAL_STATUSES[f[1]] then
        depFailed = depFailed or not runOnFailure
      else
        unfinished = unfinished or {}
        unfinished[#unfinished + 1] = dep
      end
    end
  end
  if unknown then
    return '{"unknown":[' .. table.concat(unknown, ',') .. ']}'
  end
  return nil, unfinished, depFailed or false
end

-- A job its dependencies hold (already written by createJob): stored `cancelled` when one of
-- them failed, else `waiting` on the unfinished ones (no delivery, not in the backlog), counted
-- (KEYS[5]). Answers the member its submit's answer adds.
local function holdJob(root, id, job, now, unfinished, depFailed, runOnFailure, streams,
                       retention)
  local key, metrics = jobKey(root, id), KEYS[5]
  if depFailed then
    job.status, job.finishedAt = 'cancelled', int(now)
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
    retainJob(root, root .. ':expiring', id, job, now, retention)
    redis.call('HINCRBY', metrics, 't:cancelled', '1')
    return '"status":"cancelled","finishedAt":' .. job.finishedAt
  end
  job.status = 'waiting'
  -- `held` stays when it is released or cancelled: a re-sent submit answers as stored.
  local fields = { 'status', 'waiting', 'waits', #unfinished, 'held', 'waiting' }
  if runOnFailure then
    fields[#fields + 1], fields[#fields + 2] = 'onFailure', 'run'
  end
  if streams then
    fields[#fields + 1], fields[#fields + 2] = 'dispatch', 'streams'
  end
  redis.call('HSET', key, unpack(fields))
  for _, dep in ipairs(unfinished) do
    redis.call('SADD', depsKey(root, dep), id)
    redis.call('HSET', jobKey(root, dep), 'dependents', 1)
  end
  redis.call('HINCRBY', metrics, 'g:waiting', '1')
  return '"status":"waiting"'
end

local function submitAt(a, n, now)
  local root, outbox = KEYS[1], KEYS[2]
  local pending, metrics, events = KEYS[4], KEYS[5], KEYS[6]
  local id = ARGV[a + 1]
  local tenant = ARGV[a + 6]
  local settings = storeSettings(ARGV[a + 8])
  local maxLen = settings.maxLen

  local idemKey
  if argAt(a, n, 11) ~= '' then
    idemKey = idempotencyKey(root, tenant, argAt(a, n, 11))
    local firstId = redis.call('GET', idemKey)
    local again = firstId == id and submittedBefore(root, id)
    if again then
      return again
    end
    if firstId then
      local first = readJob(jobKey(root, firstId))
      if first then
        recordHook(a, n, now, 'replayed', firstId)
        return jobJson(first, '{"replayed":')
      end
    end
  end
  -- Listed already: this submit ran before (include "job": takeListing). A refusal gives it
  -- back.
  local listing = jobsKey(root, tenant)
  local again = takeListing(root, listing, id, now)
  if again then
    return again
  end

  local unfinished, depFailed
  if argAt(a, n, 18) ~= '' then
    local unknown
    unknown, unfinished, depFailed = checkDependencies(root, tenant, argAt(a, n, 18),
      argAt(a, n, 19) == 'run')
    if unknown then
      return refused(listing, id, unknown)
    end
  end

  local runAt = now + numberOf(ARGV[a + 4])
  if ARGV[a + 3] ~= '' then
    runAt = tonumber(ARGV[a + 3])
  end

  local extra = {}
  local admission = admissionSettings(ARGV[a + 9])
  if admission then
    local level = admissionLevel(ARGV[a + 9], admission, maxLen, now)
    local delayed = 0
    if level == 'degraded' then
      delayed = admission.degradedDelayMs
    elseif level == 'critical' then
      if admission.reject then
        return refused(listing, id,
          '{"denied":{"kind":"overloaded","level":"critical","retryAfterMs":'
          .. num(admission.retryAfterMs) .. '}}')
      end
      delayed = admission.criticalDelayMs
    end
    runAt = runAt + delayed
    extra[#extra + 1] = '"degradation":{"level":"' .. level .. '","delayedMs":' .. num(delayed)
      .. '}'
  end

  if argAt(a, n, 16) ~= '' then
    local admitted, state = checkQuota(quotaKey(root, argAt(a, n, 16)),
      parseWindows(argAt(a, n, 17)), now)
    if not admitted then
      return refused(listing, id, '{"denied":{"kind":"quota","quota":' .. state .. '}}')
    end
    extra[#extra + 1] = '"quota":' .. state
  end

  local job = { data = ARGV[a + 2], createdAt = int(now), runAt = int(runAt), handler = ARGV[a + 7],
    tenant = tenant }
  if argAt(a, n, 13) ~= '' then
    job.scheduleId = argAt(a, n, 13)
  end
  if argAt(a, n, 14) ~= '' then
    job.overlap = argAt(a, n, 14)
  end
  local runsScore = job.runAt
  if argAt(a, n, 15) ~= '' then
    runsScore = argAt(a, n, 15)
  end
  -- runAt as a number without reading job.runAt back (a fraction was rounded into the text).
  local notBefore = runAt == math.floor(runAt) and runAt or tonumber(job.runAt)
  -- Queued on Streams and due at once: the stream is its queue, and the job stays out of the
  -- backlog index (include "metrics": s:in, s:out).
  local onStream = settings.streams and notBefore <= now and not depFailed and not unfinished
  if onStream then
    job.onStream = '1'
  end
  createJob(root, id, job, runsScore, true)
  if argAt(a, n, 20) ~= '' then
    job.keepUntil = int(now + tonumber(argAt(a, n, 20)))
    redis.call('HSET', jobKey(root, id), 'keepUntil', job.keepUntil)
  end
  recordHook(a, n, now, 'accepted', id)

  if depFailed or unfinished then
    extra[#extra + 1] = holdJob(root, id, job, now, unfinished, depFailed,
      argAt(a, n, 19) == 'run', settings.streams, settings.retention)
    if idemKey then
      redis.call('SET', idemKey, id, 'PX', argAt(a, n, 12))
    end
    submitted = submitted + 1
    -- The status it was stored with, last (the event scan's filters read the members before
    -- it): a stream of the job tells waiting from queued by it.
    local created = ARGV[a + 10]
    emitEvent(events, maxLen, '{"type":"job.created","at":' .. int(now)
      .. string.sub(created, 1, -2) .. ',"status":"' .. job.status .. '"}')
    if job.status == 'cancelled' then
      emitEvent(events, maxLen, jobEvent('job.cancelled', now, id, job))
    end
    return '{"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt .. ','
      .. table.concat(extra, ',') .. '}'
  end

  if settings.streams then
    streamDispatch(root, id, specJson(job), 0, notBefore, now)
  else
    putJobMessage(outbox, id, int(runAt + tonumber(ARGV[a + 5])))
  end

  if idemKey then
    redis.call('SET', idemKey, id, 'PX', argAt(a, n, 12))
  end

  -- s:in counts the job as submitted and queued at once.
  if onStream then
    streamed = streamed + 1
  else
    submitted = submitted + 1
    if redis.call('ZADD', pending, job.runAt, id) == 1 then
      queued = queued + 1
    end
  end
  emitEvent(events, maxLen, '{"type":"job.created","at":' .. int(now) .. ARGV[a + 10])

  local out = '{"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt
  if #extra > 0 then
    out = out .. ',' .. table.concat(extra, ',')
  end
  return out .. '}'
end
