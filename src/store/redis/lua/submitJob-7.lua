--[[
  submitJob: accept a job in one round trip. In this order:
  0. Its job already stored means this submit ran before (re-sent after its reply was lost):
     its answer again, nothing written or counted (include "job": submittedBefore). Told by the
     job's tenant listing (ZADD NX, the listing write a submit makes anyway; a refusal below
     removes it) or, with an idempotency key, by the key naming this job.
  1. If the tenant's idempotency key is known (and its job still exists) returns that job and
     writes nothing (nothing evaluated, nothing counted) but, for a webhook (ARGV[21]), its
     `replayed` counter and history entry.
  2. With a degradation policy: evaluates the controller (its state is kept even if the submit
     is refused), then degraded → runAt += degradedDelayMs; critical → denied (reject) or
     runAt += criticalDelayMs (delay).
  3. With a quota: denied → nothing written, nothing counted; else counted.
  4. Stamps createdAt = now and runAt = runAt or now + delayMs (+ the degradation delay), writes
     the `queued` job, indexes it, remembers the key, puts the job's first message in the outbox
     (its entry: the body is the job's, include "outbox"; or, dispatching to streams, its
     delivery on the stream) and the job in the pending backlog, counts it (t:submitted,
     g:queued) and writes `job.created`. A Streams job due at once stays out of the backlog
     index, its hash has `onStream`, and s:in counts it instead (include "metrics").
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages (not written: a job's first message has no body, include "outbox")
    KEYS[4] pending backlog (zset: job id -> runAt)
    KEYS[5] metrics (hash)
    KEYS[6] events (stream)
    KEYS[7] degradation state (hash)
    ARGV[1] id
    ARGV[2] JobSpec JSON without createdAt and runAt
    ARGV[3] runAt ('' = now + delayMs)
    ARGV[4] delayMs
    ARGV[5] recoverGraceMs
    ARGV[6] tenant
    ARGV[7] handler
    ARGV[8] the store's settings: `eventsMaxLen dispatch jobMs maxJobs maxRuns` (include
            "settings"). eventsMaxLen 0 = no events; dispatch `outbox` (a queue publishes the
            job) or `streams` (straight onto the Redis Streams queue, include "streams": no
            outbox entry, nothing to publish); retention `jobMs maxJobs maxRuns` (a job whose
            dependency already failed is stored `cancelled`)
    ARGV[9] the degradation settings ('' = no policy): `degradedDelayMs criticalAction
            criticalDelayMs retryAfterMs evaluateEveryMs;policy` (include "settings"): the
            critical action `reject` or `delay`; retryAfterMs of a critical rejection; the
            stored level is reused when evaluated less than evaluateEveryMs ago (0 = evaluate
            on every submit); the policy as include "degrade" parses it
    ARGV[10] the `job.created` event after its "at" member, closing brace included:
             `,"jobId":…,"handler":…,"tenant":…` (then "scheduleId", "webhook" when set)
  The rest may be left out when empty (absent reads as ''):
    ARGV[11] idempotency key ('' = none)
    ARGV[12] idempotencyMs
    ARGV[13] scheduleId ('' = none)
    ARGV[14] overlap ('' = none)
    ARGV[15] fireAt ('' = none; the runs index score, else runAt)
    ARGV[16] quota key ('' = none)
    ARGV[17] quota windows (`windowMs limit ...`)
    ARGV[18] dependencies: job ids separated by spaces ('' = none; include "deps", ADR 0014)
    ARGV[19] onFailure: 'run' or '' (cancel)
    ARGV[20] keep: '' or ms — the job's key has a TTL of its own (a webhook's sender's retry
             window, however it compares with the store's): the job hash gets
             `keepUntil = now + ms`, which retention honours (include "job": retainJob,
             dropFinished)
    ARGV[21] webhook endpoint ('' = none): count `accepted` (or `replayed`, on a replay) in
             `<root>:hooks`, push the delivery onto `<root>:hook:<n>:<endpoint>` (capped), and
             add `"webhook"` to job.created
    ARGV[22] the webhook's event id ('' = none)
    ARGV[23] how many deliveries the endpoint's history keeps (WEBHOOK_HISTORY,
             src/store/port/webhooks.ts; '' without a webhook)
  With dependencies, after the replay check: an id that names no job of the tenant ->
  {"unknown":[ids]}, nothing written. All succeeded (or failed, with onFailure 'run') -> an
  ordinary submit. Else, once admitted: a failed one and onFailure cancel -> stored `cancelled`;
  otherwise stored `waiting` (no outbox entry, no stream entry, not pending; counted g:waiting)
  with `waits` = its unfinished dependencies, listed in each one's `<root>:deps:<id>`.
  Output: JSON text
    {"createdAt":ms,"runAt":ms,"quota"?:QuotaState,"degradation"?:{"level":..,"delayedMs":ms}}
                                  written; the caller knows the rest of the job and message
    {"replayed":JobRecord}        the key was used: the first job
    {"denied":Denied}             refused by admission control; nothing written
    {"unknown":[id…]}             dependencies that name no job of the tenant; nothing written
    a written job that is not queued adds "status":"waiting"|"cancelled" (and "finishedAt")
]]
--@include "time"
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

local root, outbox = KEYS[1], KEYS[2]
local pending, metrics, events = KEYS[4], KEYS[5], KEYS[6]
local id = ARGV[1]
local settings = storeSettings(ARGV[8])
local maxLen = settings.maxLen
local now = nowMs()

-- A webhook delivery: counted and listed in the endpoint's history (written or replayed).
local hook = ARGV[21] or ''
local function recordHook(outcome, jobId)
  if hook == '' then
    return
  end
  redis.call('HINCRBY', hookCountsKey(root), outcome .. ':' .. hook, '1')
  local entry = '{"at":' .. int(now)
  if ARGV[22] ~= '' then
    entry = entry .. ',"eventId":' .. jsonString(ARGV[22])
  end
  local log = hookLogKey(root, hook)
  redis.call('LPUSH', log, entry .. ',"outcome":"' .. outcome .. '","jobId":' .. jsonString(jobId)
    .. '}')
  redis.call('LTRIM', log, 0, tonumber(ARGV[23]) - 1)
end

local idemKey
if (ARGV[11] or '') ~= '' then
  idemKey = idempotencyKey(root, ARGV[6], ARGV[11])
  local firstId = redis.call('GET', idemKey)
  local again = firstId == id and submittedBefore(root, id)
  if again then
    return again
  end
  if firstId then
    local first = readJob(jobKey(root, firstId))
    if first then
      recordHook('replayed', firstId)
      return jobJson(first, '{"replayed":')
    end
  end
end
-- Listed already: this submit ran before (include "job": takeListing). A refusal gives it back.
local listing = jobsKey(root, ARGV[6])
local again = takeListing(root, listing, id, now)
if again then
  return again
end
local function refuse(answer)
  redis.call('ZREM', listing, id)
  return answer
end

local unfinished, depFailed = {}, false
if (ARGV[18] or '') ~= '' then
  local unknown = {}
  for dep in string.gmatch(ARGV[18], '%S+') do
    local f = redis.call('HMGET', jobKey(root, dep), 'status', 'tenant')
    if not f[1] or (f[2] or 'default') ~= ARGV[6] then
      unknown[#unknown + 1] = jsonString(dep)
    elseif f[1] == 'succeeded' then
      -- satisfied
    elseif FINAL_STATUSES[f[1]] then
      depFailed = depFailed or ARGV[19] ~= 'run'
    else
      unfinished[#unfinished + 1] = dep
    end
  end
  if #unknown > 0 then
    return refuse('{"unknown":[' .. table.concat(unknown, ',') .. ']}')
  end
end

local runAt = now + numberOf(ARGV[4])
if ARGV[3] ~= '' then
  runAt = tonumber(ARGV[3])
end

local extra = {}
local known
local admission = admissionSettings(ARGV[9])
if admission then
  local level = storedLevel(KEYS[7], now, admission.everyMs)
  if not level then
    known = metricsLoad(metrics, { 'avg:lag', 'avg:fail', 's:in', 's:out' })
    local depth = dueBacklog(root, pending, metrics, known, now)
    level = evaluateDegradation(KEYS[7], events, maxLen, parsePolicy(admission.policy), depth,
      known['avg:lag'], known['avg:fail'], now)
  end
  local delayed = 0
  if level == 'degraded' then
    delayed = admission.degradedDelayMs
  elseif level == 'critical' then
    if admission.reject then
      return refuse('{"denied":{"kind":"overloaded","level":"critical","retryAfterMs":'
        .. num(admission.retryAfterMs) .. '}}')
    end
    delayed = admission.criticalDelayMs
  end
  runAt = runAt + delayed
  extra[#extra + 1] = '"degradation":{"level":"' .. level .. '","delayedMs":' .. num(delayed) .. '}'
end

if (ARGV[16] or '') ~= '' then
  local admitted, state = checkQuota(quotaKey(root, ARGV[16]), parseWindows(ARGV[17]), now)
  if not admitted then
    return refuse('{"denied":{"kind":"quota","quota":' .. state .. '}}')
  end
  extra[#extra + 1] = '"quota":' .. state
end

local job = { data = ARGV[2], createdAt = int(now), runAt = int(runAt), handler = ARGV[7],
  tenant = ARGV[6] }
if (ARGV[13] or '') ~= '' then
  job.scheduleId = ARGV[13]
end
if (ARGV[14] or '') ~= '' then
  job.overlap = ARGV[14]
end
local runsScore = job.runAt
if (ARGV[15] or '') ~= '' then
  runsScore = ARGV[15]
end
-- runAt as a number without reading job.runAt back (a fraction was rounded into the text).
local notBefore = runAt == math.floor(runAt) and runAt or tonumber(job.runAt)
-- Queued on Streams and due at once: the stream is its queue, and the job stays out of the
-- backlog index (include "metrics": s:in, s:out).
local onStream = settings.streams and notBefore <= now and not depFailed and #unfinished == 0
if onStream then
  job.onStream = '1'
end
createJob(root, id, job, runsScore, true)
if (ARGV[20] or '') ~= '' then
  job.keepUntil = int(now + tonumber(ARGV[20]))
  redis.call('HSET', jobKey(root, id), 'keepUntil', job.keepUntil)
end
recordHook('accepted', id)

if depFailed or #unfinished > 0 then
  local key = jobKey(root, id)
  if depFailed then
    job.status, job.finishedAt = 'cancelled', int(now)
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
    retainJob(root, root .. ':expiring', id, job, now, settings.retention)
    redis.call('HINCRBY', metrics, 't:cancelled', '1')
    extra[#extra + 1] = '"status":"cancelled","finishedAt":' .. job.finishedAt
  else
    job.status = 'waiting'
    local fields = { 'status', 'waiting', 'waits', #unfinished }
    if ARGV[19] == 'run' then
      fields[#fields + 1], fields[#fields + 2] = 'onFailure', 'run'
    end
    if settings.streams then
      fields[#fields + 1], fields[#fields + 2] = 'dispatch', 'streams'
    end
    redis.call('HSET', key, unpack(fields))
    for _, dep in ipairs(unfinished) do
      redis.call('SADD', depsKey(root, dep), id)
      redis.call('HSET', jobKey(root, dep), 'dependents', 1)
    end
    redis.call('HINCRBY', metrics, 'g:waiting', '1')
    extra[#extra + 1] = '"status":"waiting"'
  end
  if idemKey then
    redis.call('SET', idemKey, id, 'PX', ARGV[12])
  end
  redis.call('HINCRBY', metrics, 't:submitted', '1')
  emitEvent(events, maxLen, '{"type":"job.created","at":' .. int(now) .. ARGV[10])
  if job.status == 'cancelled' then
    emitEvent(events, maxLen, jobEvent('job.cancelled', now, id, job))
  end
  return '{"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt .. ','
    .. table.concat(extra, ',') .. '}'
end

if settings.streams then
  streamDispatch(root, id, specJson(job), 0, notBefore, now)
else
  local recoverAt = int(runAt + tonumber(ARGV[5]))
  putJobMessage(outbox, id, recoverAt)
end

if idemKey then
  redis.call('SET', idemKey, id, 'PX', ARGV[12])
end

-- Increments: HINCRBY each (what metricsFlush would write, without building a batch). s:in
-- counts the job as submitted and queued at once.
if onStream then
  redis.call('HINCRBY', metrics, 's:in', '1')
else
  redis.call('HINCRBY', metrics, 't:submitted', '1')
  if redis.call('ZADD', pending, job.runAt, id) == 1 then
    redis.call('HINCRBY', metrics, 'g:queued', '1')
  end
end
emitEvent(events, maxLen, '{"type":"job.created","at":' .. int(now) .. ARGV[10])

local out = '{"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt
if #extra > 0 then
  out = out .. ',' .. table.concat(extra, ',')
end
return out .. '}'
