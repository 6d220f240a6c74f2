--[[
  submitJob: accept a job in one round trip. In this order:
  1. If the tenant's idempotency key is known (and its job still exists) returns that job and
     writes nothing (nothing evaluated, nothing counted) but, for a webhook (ARGV[29]), its
     `replayed` counter and history entry.
  2. With a degradation policy: evaluates the controller (its state is kept even if the submit
     is refused), then degraded → runAt += degradedDelayMs; critical → denied (reject) or
     runAt += criticalDelayMs (delay).
  3. With a quota: denied → nothing written, nothing counted; else counted.
  4. Stamps createdAt = now and runAt = runAt or now + delayMs (+ the degradation delay), writes
     the `queued` job, indexes it, remembers the key, puts the job's message in the outbox (or,
     dispatching to streams, its delivery on the stream) and the job in the pending backlog,
     counts it (t:submitted, g:queued) and writes `job.created`.
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages
    KEYS[4] pending backlog (zset: job id -> runAt)
    KEYS[5] metrics (hash)
    KEYS[6] events (stream)
    KEYS[7] degradation state (hash)
    ARGV[1] id
    ARGV[2] id as a JSON string
    ARGV[3] JobSpec JSON without createdAt and runAt
    ARGV[4] runAt ('' = now + delayMs)
    ARGV[5] delayMs
    ARGV[6] recoverGraceMs
    ARGV[7] tenant
    ARGV[8] handler
    ARGV[9] eventsMaxLen (0 = no events)
    ARGV[10] dispatch: '' = the outbox (a queue publishes it); 'streams' = straight onto the
             Redis Streams queue (include "streams"): no outbox entry, nothing to publish
    ARGV[11] retention: `jobMs maxJobs maxRuns` (a job whose dependency already failed is
             stored `cancelled`)
    ARGV[12] degradation policy ('' = none; see include "degrade")
    ARGV[13] degradedDelayMs
    ARGV[14] critical action: reject | delay
    ARGV[15] criticalDelayMs
    ARGV[16] retryAfterMs of a critical rejection
    ARGV[17] reuse the stored degradation level when evaluated less than this long ago (ms; 0 =
             evaluate on every submit)
    ARGV[18] the `job.created` event after its "at" member, closing brace included:
             `,"jobId":…,"handler":…,"tenant":…` (then "scheduleId", "webhook" when set)
  The rest may be left out when empty (absent reads as ''):
    ARGV[19] idempotency key ('' = none)
    ARGV[20] idempotencyMs
    ARGV[21] scheduleId ('' = none)
    ARGV[22] overlap ('' = none)
    ARGV[23] fireAt ('' = none; the runs index score, else runAt)
    ARGV[24] quota key ('' = none)
    ARGV[25] quota windows (`windowMs limit ...`)
    ARGV[26] dependencies: job ids separated by spaces ('' = none; include "deps", ADR 0014)
    ARGV[27] onFailure: 'run' or '' (cancel)
    ARGV[28] keep: '' or ms — the job's key has a TTL of its own (a webhook's sender's retry
             window, however it compares with the store's): the job hash gets
             `keepUntil = now + ms`, which retention honours (include "job": retainJob,
             dropFinished)
    ARGV[29] webhook endpoint ('' = none): count `accepted` (or `replayed`, on a replay) in
             `<root>:hooks`, push the delivery onto `<root>:hook:<n>:<endpoint>` (capped), and
             add `"webhook"` to job.created
    ARGV[30] the webhook's event id ('' = none)
    ARGV[31] how many deliveries the endpoint's history keeps (WEBHOOK_HISTORY,
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

local root, outbox, messages = KEYS[1], KEYS[2], KEYS[3]
local pending, metrics, events = KEYS[4], KEYS[5], KEYS[6]
local id, idJson = ARGV[1], ARGV[2]
local maxLen = tonumber(ARGV[9])
local now = nowMs()

-- A webhook delivery: counted and listed in the endpoint's history (written or replayed).
local hook = ARGV[29] or ''
local function recordHook(outcome, jobId)
  if hook == '' then
    return
  end
  redis.call('HINCRBY', hookCountsKey(root), outcome .. ':' .. hook, '1')
  local entry = '{"at":' .. int(now)
  if ARGV[30] ~= '' then
    entry = entry .. ',"eventId":' .. jsonString(ARGV[30])
  end
  local log = hookLogKey(root, hook)
  redis.call('LPUSH', log, entry .. ',"outcome":"' .. outcome .. '","jobId":' .. jsonString(jobId)
    .. '}')
  redis.call('LTRIM', log, 0, tonumber(ARGV[31]) - 1)
end

local idemKey
if (ARGV[19] or '') ~= '' then
  idemKey = idempotencyKey(root, ARGV[7], ARGV[19])
  local firstId = redis.call('GET', idemKey)
  if firstId then
    local first = readJob(jobKey(root, firstId))
    if first then
      recordHook('replayed', firstId)
      return '{"replayed":' .. jobJson(first) .. '}'
    end
  end
end

local unfinished, depFailed = {}, false
if (ARGV[26] or '') ~= '' then
  local unknown = {}
  for dep in string.gmatch(ARGV[26], '%S+') do
    local f = redis.call('HMGET', jobKey(root, dep), 'status', 'tenant')
    if not f[1] or (f[2] or 'default') ~= ARGV[7] then
      unknown[#unknown + 1] = jsonString(dep)
    elseif f[1] == 'succeeded' then
      -- satisfied
    elseif FINAL_STATUSES[f[1]] then
      depFailed = depFailed or ARGV[27] ~= 'run'
    else
      unfinished[#unfinished + 1] = dep
    end
  end
  if #unknown > 0 then
    return '{"unknown":[' .. table.concat(unknown, ',') .. ']}'
  end
end

local runAt = now + tonumber(ARGV[5])
if ARGV[4] ~= '' then
  runAt = tonumber(ARGV[4])
end

local extra = {}
local known
if ARGV[12] ~= '' then
  local level = storedLevel(KEYS[7], now, tonumber(ARGV[17]) or 0)
  if not level then
    known = metricsLoad(metrics, { 'avg:lag', 'avg:fail' })
    local depth = redis.call('ZCOUNT', pending, '-inf', int(now))
    level = evaluateDegradation(KEYS[7], events, maxLen, parsePolicy(ARGV[12]), depth,
      known['avg:lag'], known['avg:fail'], now)
  end
  local delayed = 0
  if level == 'degraded' then
    delayed = tonumber(ARGV[13])
  elseif level == 'critical' then
    if ARGV[14] == 'reject' then
      return '{"denied":{"kind":"overloaded","level":"critical","retryAfterMs":'
        .. num(tonumber(ARGV[16])) .. '}}'
    end
    delayed = tonumber(ARGV[15])
  end
  runAt = runAt + delayed
  extra[#extra + 1] = '"degradation":{"level":"' .. level .. '","delayedMs":' .. num(delayed) .. '}'
end

if (ARGV[24] or '') ~= '' then
  local admitted, state = checkQuota(quotaKey(root, ARGV[24]), parseWindows(ARGV[25]), now)
  if not admitted then
    return '{"denied":{"kind":"quota","quota":' .. state .. '}}'
  end
  extra[#extra + 1] = '"quota":' .. state
end

local job = { data = ARGV[3], createdAt = int(now), runAt = int(runAt), handler = ARGV[8],
  tenant = ARGV[7] }
if (ARGV[21] or '') ~= '' then
  job.scheduleId = ARGV[21]
end
if (ARGV[22] or '') ~= '' then
  job.overlap = ARGV[22]
end
local runsScore = job.runAt
if (ARGV[23] or '') ~= '' then
  runsScore = ARGV[23]
end
createJob(root, id, job, runsScore)
if (ARGV[28] or '') ~= '' then
  job.keepUntil = int(now + tonumber(ARGV[28]))
  redis.call('HSET', jobKey(root, id), 'keepUntil', job.keepUntil)
end
recordHook('accepted', id)

if depFailed or #unfinished > 0 then
  local key = jobKey(root, id)
  if depFailed then
    job.status, job.finishedAt = 'cancelled', int(now)
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
    retainJob(root, root .. ':expiring', id, job, now, ARGV[11])
    redis.call('HINCRBY', metrics, 't:cancelled', '1')
    extra[#extra + 1] = '"status":"cancelled","finishedAt":' .. job.finishedAt
  else
    job.status = 'waiting'
    local fields = { 'status', 'waiting', 'waits', #unfinished }
    if ARGV[27] == 'run' then
      fields[#fields + 1], fields[#fields + 2] = 'onFailure', 'run'
    end
    if ARGV[10] == 'streams' then
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
    redis.call('SET', idemKey, id, 'PX', ARGV[20])
  end
  redis.call('HINCRBY', metrics, 't:submitted', '1')
  emitEvent(events, maxLen, '{"type":"job.created","at":' .. int(now) .. ARGV[18])
  if job.status == 'cancelled' then
    emitEvent(events, maxLen, jobEvent('job.cancelled', now, id, job))
  end
  return '{"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt .. ','
    .. table.concat(extra, ',') .. '}'
end

if ARGV[10] == 'streams' then
  streamDispatch(root, id, specJson(job), 0, tonumber(job.runAt), now)
else
  local recoverAt = int(runAt + tonumber(ARGV[6]))
  putMessage(outbox, messages, id, recoverAt, '{"id":' .. idJson .. ',"dedupId":' .. idJson
    .. ',"job":' .. specJson(job) .. ',"notBefore":' .. job.runAt .. ',"recoverAt":' .. recoverAt
    .. '}')
end

if idemKey then
  redis.call('SET', idemKey, id, 'PX', ARGV[20])
end

-- Two increments: HINCRBY each (what metricsFlush would write, without building a batch).
redis.call('HINCRBY', metrics, 't:submitted', '1')
if redis.call('ZADD', pending, job.runAt, id) == 1 then
  redis.call('HINCRBY', metrics, 'g:queued', '1')
end
emitEvent(events, maxLen, '{"type":"job.created","at":' .. int(now) .. ARGV[18])

local out = '{"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt
if #extra > 0 then
  out = out .. ',' .. table.concat(extra, ',')
end
return out .. '}'
