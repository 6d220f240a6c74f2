--[[
  submitMany: accept a chunk of one tenant's jobs in one round trip (POST /v1/jobs/batch,
  docs/adr/0020-batch-submit.md). Each item is judged on its own, in order, exactly as submitJob
  judges a job (without its webhook, schedule and keepUntil arguments, which a batch never has):
  0. its job stored already (told as submitJob tells it): the chunk ran before (re-sent after
     its reply was lost) → that item's answer again, nothing written or counted for it;
  1. its idempotency key known (and its job still exists) → that job, nothing written for it; a
     key used by an earlier item of the same chunk is known by then (that item's job answers);
  2. dependencies that name no job of the tenant → {"unknown":[ids]}, nothing written for it;
  3. degradation: evaluated once per chunk (before the first item that is not a replay); critical
     with reject → {"denied":overloaded} for every item that is not a replay;
  4. the quota, counted item by item: the items up to the limit are admitted and counted, an
     item over it → {"denied":quota}, nothing written or counted for it (within one script the
     clock stands still, so every later item of the chunk is denied too);
  5. the write, as submitJob's step 4 (outbox message or stream delivery, pending, counters,
     job.created; a Streams job due at once outside the backlog index, counted in s:in), or
     `waiting` / `cancelled` with dependencies.
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages (not written: a job's first message has no body, include "outbox")
    KEYS[4] pending backlog (zset: job id -> runAt)
    KEYS[5] metrics (hash)
    KEYS[6] events (stream)
    KEYS[7] degradation state (hash)
    ARGV[1] recoverGraceMs
    ARGV[2] tenant
    ARGV[3] idempotencyMs
    ARGV[4] eventsMaxLen (0 = no events)
    ARGV[5] degradation policy ('' = none; see include "degrade")
    ARGV[6] degradedDelayMs
    ARGV[7] critical action: reject | delay
    ARGV[8] criticalDelayMs
    ARGV[9] retryAfterMs of a critical rejection
    ARGV[10] quota key ('' = none)
    ARGV[11] quota windows (`windowMs limit ...`)
    ARGV[12] dispatch: '' = the outbox; 'streams' = straight onto the Redis Streams queue
    ARGV[13] reuse the stored degradation level when evaluated less than this long ago (ms)
    ARGV[14] retention: `jobMs maxJobs maxRuns`
    ARGV[15] how many items follow (n)
    then 8 arguments per item, from ARGV[16]:
      id, JobSpec JSON without createdAt and runAt, runAt ('' = now + delayMs), delayMs,
      idempotency key ('' = none), handler, dependencies (ids separated by spaces, '' = none),
      onFailure ('run' or '')
  Output: JSON text, an array with one element per item, in order, each as submitJob answers:
    {"createdAt":ms,"runAt":ms,"quota"?:..,"degradation"?:..,"status"?:..,"finishedAt"?:ms}
    {"replayed":JobRecord}  {"denied":Denied}  {"unknown":[id…]}
    {"replayedAs":i}  a replay of the same job as the earlier item at index i (0-based) of this
                      chunk, which carries the record: a job is sent once per chunk however many
                      items repeat its key (the reply stays as small as the request)
    {"replayedId":id} a replay of job `id`, whose spec, result and progress are over
                      REPLAY_INLINE_BYTES: not carried
                      (the caller reads it), so a reply holds at most 200 × 16 KiB of records
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
--@include "submit"

local root, outbox = KEYS[1], KEYS[2]
local pending, metrics, events = KEYS[4], KEYS[5], KEYS[6]
local tenant = ARGV[2]
local listing = jobsKey(root, tenant)
local maxLen = numberOf(ARGV[4])
local grace = numberOf(ARGV[1])
local streams = ARGV[12] == 'streams'
local n = tonumber(ARGV[15])
local now = nowMs()
local windows
if ARGV[10] ~= '' then
  windows = parseWindows(ARGV[11])
end

-- The degradation level, evaluated once for the chunk when the first item needs it.
local level, delayed, overloaded
local function degradation()
  if level then
    return
  end
  level = storedLevel(KEYS[7], now, numberOf(ARGV[13]) or 0)
  if not level then
    local known = metricsLoad(metrics, { 'avg:lag', 'avg:fail', 's:in', 's:out', 'g:running' })
    local depth = dueBacklog(root, pending, metrics, known, now)
    level = evaluateDegradation(KEYS[7], events, maxLen, parsePolicy(ARGV[5]), depth,
      known['avg:lag'], known['avg:fail'], now, known['g:running'])
  end
  delayed = 0
  if level == 'degraded' then
    delayed = tonumber(ARGV[6])
  elseif level == 'critical' then
    if ARGV[7] == 'reject' then
      overloaded = '{"denied":{"kind":"overloaded","level":"critical","retryAfterMs":'
        .. num(tonumber(ARGV[9])) .. '}}'
    end
    delayed = tonumber(ARGV[8])
  end
end

-- A replayed job whose spec, result and progress are longer than this together is named in the
-- answer, not carried: a chunk of tiny items repeating the keys of large jobs (large inputs or
-- large results) would otherwise build a reply of up to 200 of them (about 190 MB at the largest
-- inputs) in one script, with every other client of this Redis waiting. The caller reads each
-- named job on its own, once.
local REPLAY_INLINE_BYTES = 16384

local submitted, queued, streamed = 0, 0, 0
-- First job id -> index (0-based) of the item whose answer carries its record.
local replays = {}

local function submitOne(base, index)
  local id = ARGV[base]
  local idemKey
  if ARGV[base + 4] ~= '' then
    idemKey = idempotencyKey(root, tenant, ARGV[base + 4])
    local firstId = redis.call('GET', idemKey)
    local again = firstId == id and submittedBefore(root, id)
    if again then
      return again
    end
    if firstId then
      local firstKey = jobKey(root, firstId)
      local size = redis.call('HSTRLEN', firstKey, 'data')
      if size > 0 then
        -- The record carries its result and progress too, of any size.
        size = size + redis.call('HSTRLEN', firstKey, 'result')
          + redis.call('HSTRLEN', firstKey, 'progress')
        if replays[firstId] then
          return '{"replayedAs":' .. replays[firstId] .. '}'
        end
        replays[firstId] = index
        if size > REPLAY_INLINE_BYTES then
          return '{"replayedId":' .. jsonString(firstId) .. '}'
        end
        return jobJson(readJob(firstKey), '{"replayed":')
      end
    end
  end

  -- Listed already: this chunk ran before (include "job": takeListing). A refusal gives it back.
  local again = takeListing(root, listing, id, now)
  if again then
    return again
  end

  local unfinished, depFailed
  if ARGV[base + 6] ~= '' then
    local unknown
    unknown, unfinished, depFailed = checkDependencies(root, tenant, ARGV[base + 6],
      ARGV[base + 7] == 'run')
    if unknown then
      return refused(listing, id, unknown)
    end
  end

  local runAt = now + numberOf(ARGV[base + 3])
  if ARGV[base + 2] ~= '' then
    runAt = tonumber(ARGV[base + 2])
  end

  local extra = {}
  if ARGV[5] ~= '' then
    degradation()
    if overloaded then
      return refused(listing, id, overloaded)
    end
    runAt = runAt + delayed
    extra[#extra + 1] = '"degradation":{"level":"' .. level .. '","delayedMs":' .. num(delayed)
      .. '}'
  end

  if windows then
    local admitted, state = checkQuota(quotaKey(root, ARGV[10]), windows, now)
    if not admitted then
      return refused(listing, id, '{"denied":{"kind":"quota","quota":' .. state .. '}}')
    end
    extra[#extra + 1] = '"quota":' .. state
  end

  local job = { data = ARGV[base + 1], createdAt = int(now), runAt = int(runAt),
    handler = ARGV[base + 5], tenant = tenant }
  -- As submitJob: due at once on Streams, the job stays out of the backlog index (s:in).
  local notBefore = runAt == math.floor(runAt) and runAt or tonumber(job.runAt)
  local onStream = streams and notBefore <= now and not depFailed and not unfinished
  if onStream then
    job.onStream = '1'
    streamed = streamed + 1
  else
    submitted = submitted + 1
  end
  createJob(root, id, job, job.runAt, true)

  if depFailed or unfinished then
    extra[#extra + 1] = holdJob(root, id, job, now, unfinished, depFailed,
      ARGV[base + 7] == 'run', streams, ARGV[14])
    if idemKey then
      redis.call('SET', idemKey, id, 'PX', ARGV[3])
    end
    emitEvent(events, maxLen, jobEvent('job.created', now, id, job,
      '"status":"' .. job.status .. '"'))
    if job.status == 'cancelled' then
      emitEvent(events, maxLen, jobEvent('job.cancelled', now, id, job))
    end
  else
    if streams then
      streamDispatch(root, id, specJson(job), 0, notBefore, now)
    else
      putJobMessage(outbox, id, int(runAt + grace))
    end
    if idemKey then
      redis.call('SET', idemKey, id, 'PX', ARGV[3])
    end
    if not onStream and redis.call('ZADD', pending, job.runAt, id) == 1 then
      queued = queued + 1
    end
    emitEvent(events, maxLen, jobEvent('job.created', now, id, job))
  end

  local out = '{"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt
  if #extra > 0 then
    out = out .. ',' .. table.concat(extra, ',')
  end
  return out .. '}'
end

local results = {}
for i = 0, n - 1 do
  results[i + 1] = submitOne(16 + i * 8, i)
end
-- The counters once for the chunk (what n single submits would add up to).
if submitted > 0 then
  redis.call('HINCRBY', metrics, 't:submitted', submitted)
end
if queued > 0 then
  redis.call('HINCRBY', metrics, 'g:queued', queued)
end
if streamed > 0 then
  redis.call('HINCRBY', metrics, 's:in', streamed)
end
return '[' .. table.concat(results, ',') .. ']'
