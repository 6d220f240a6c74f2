--[[
  Include "job" (needs "keys", "json", "time"): the job hash and its JSON.

  Job hash `<root>:j:<id>` fields:
    data        JobSpec JSON without createdAt and runAt (JSON.stringify'd in TS)
    createdAt   ms            runAt        ms (may change: retryDead sets it to now)
    status      JobStatus     attempts     attempts begun
    startedAt   ms, optional  finishedAt   ms, optional
    leaseUntil  ms, while running (the run lease)
    dependents  1 when some `waiting` job waits for this one (include "deps")
    keepUntil   ms, optional: its idempotency key lives until then (a webhook job, submitJob);
                retention keeps the record at least as long and no cap drops it earlier
    slot        the concurrency limit's slot set (`<root>:limit:<n>:<key>`) the run holds a
                slot in, while running under a limit (see beginRun)
    attemptBase attempts made before the last re-dispatch from the dead-letter list, optional
    result      JSON, optional             error  JobError JSON, optional
    progress, progressAt, cancelRequested, logSeq, log:<n>
                a running attempt's progress and log, and a cancel request (include "attempt")
    node        the node (instanceId) that began the latest attempt, when the runner named one
    refused     the last placement refusal, JSON {node, reason, at} (refusePlacement)
    limitedAt   ms of the first `limited` answer before its first attempt (include "begin"):
                that start's dispatch lag counts up to it; removed when it starts
    onStream    1: a Streams submit queued it due at once, outside the backlog index (include
                "metrics": s:in, s:out; readJob leaves it out); retryDead, which queues a dead
                job again in the index, removes it
    overlapHeld 1: begun under another overlap policy, it was handed its schedule's `skip` lease
                (leaseToRunning): its end hands the lease on
    handler, scheduleId, overlap, tenant   copies of spec fields, for filters, overlap checks
                                           and events (tenant may be absent on older jobs)

  readJob(key)                 Lua table of the present fields, or nil when the job is missing.
  readWholeJob(key)            The same with HGETALL, for a delivery's begin and finish: about a
                               third cheaper for Redis than asking for the 23 fields by name, most
                               of which a job does not have, and the same one billed command. The
                               table also holds the attempt's log entries (include "attempt"):
                               a job that logs reads them back here, never in a listing.
  jobTenant(job)               The job's tenant ('default' for jobs written without one).
  createJob(root, id, job, runsScore, listed)
                               Writes a new `queued` job from job.data/createdAt/runAt/handler/
                               tenant/scheduleId/overlap/onStream and indexes it (its tenant's jobs by
                               createdAt, unless `listed`: the caller did; the schedule's runs by
                               runsScore while the schedule exists — runs of a deleted schedule
                               are not indexed).
  submittedBefore(root, id)    A submit's answer when its job is stored already, else nil (one
                               HMGET; submitJob and submitMany ask only when the job's listing
                               entry or idempotency key shows it). Submits make fresh job ids, so
                               a stored job means this very submit ran before: its command was
                               re-sent after the reply was lost (ioredis re-sends on reconnect).
                               The caller writes and counts nothing then: a second write would
                               reset a job a worker may have begun or finished meanwhile (Redis
                               Streams deliver before the reply), and dispatch it again. The
                               answer is the first one's (createdAt, runAt, and `waiting`, or
                               `cancelled` at the submit), without its quota and degradation.
  takeListing(root, listing, id, now)
                               A submit's first write: the job's entry in its tenant's listing
                               (`ZADD NX`, the listing write a submit makes anyway; the caller
                               then creates the job `listed`, and a refusal removes the entry).
                               Answers submittedBefore's answer when the entry was there already
                               (this submit ran before), else nil. An entry whose job expired
                               (the sweep has not reached it) takes the new job's createdAt.
  specJson(job)                The JobSpec JSON (data plus createdAt and runAt).
  jobJson(job, before)         The JobRecord JSON; with `before` (e.g. '{"ok":'), the object
                               `before` opens with the record as its last member.
  retainJob(root, expiring, id, job, now, retention)
                               A job reached a final state: keep it `jobMs`, then it expires.
                               `retention` is the text `jobMs maxJobs maxRuns` (0 = no cap): past
                               `maxJobs` finished jobs the oldest are dropped now, and past
                               `maxRuns` finished runs of its schedule the oldest of those (at
                               most 2 of each per call, among the 20 oldest finished jobs or
                               runs, so the work stays bounded; jobs kept by `keepUntil` and
                               unfinished runs are skipped, never dropped).
  keepJob(root, expiring, id, job)
                               Undo retainJob (a dead job queued again).
  releaseRun(root, key, id, job)
                               Drop the run lease, the concurrency slot (see releaseSlot) and,
                               if this job holds it, the schedule's overlap lease (handed on to
                               another run still running when it was handed to this one).
  leaseToRunning(root, scheduleId, except, now)
                               A `skip` schedule's overlap lease for a run begun under another
                               policy (before a PATCH to `skip`): the latest-fired of its 200
                               latest runs fired by now that is still running under an unexpired
                               run lease, other than `except`, takes it until that lease ends
                               (marked overlapHeld); answers its id. None: the lease is deleted,
                               answers nil. Runs only on a PATCH to `skip` and when such a run
                               ends, never on a plain skip schedule's path.
  releaseSlot(key, id, job)    Leave the concurrency limit's slot set the job holds a slot in, if
                               any (nothing to do, and no command, for a job without a limit).
  sweepExpired(root, expiring, now, max)
                               Remove up to `max` expired jobs from the listing indexes.
]]
--@include "time"
--@include "keys"
--@include "json"

local FINAL_STATUSES = { succeeded = true, dead = true, cancelled = true, skipped = true }

local JOB_FIELDS = { 'data', 'createdAt', 'runAt', 'status', 'attempts', 'startedAt',
  'finishedAt', 'leaseUntil', 'result', 'error', 'handler', 'scheduleId', 'overlap', 'tenant',
  'attemptBase', 'slot', 'dependents', 'progress', 'progressAt', 'cancelRequested', 'node',
  'refused', 'keepUntil', 'overlapHeld' }

local function readJob(key)
  local values = redis.call('HMGET', key, unpack(JOB_FIELDS))
  if not values[1] then
    return nil
  end
  local job = {}
  for i = 1, #JOB_FIELDS do
    local value = values[i]
    if value then
      job[JOB_FIELDS[i]] = value
    end
  end
  return job
end

local function readWholeJob(key)
  local flat = redis.call('HGETALL', key)
  local job = {}
  for i = 1, #flat, 2 do
    job[flat[i]] = flat[i + 1]
  end
  if not job.data then
    return nil
  end
  return job
end

local function jobTenant(job)
  return job.tenant or 'default'
end

local function createJob(root, id, job, runsScore, listed)
  job.status = 'queued'
  job.attempts = '0'
  local fields = { 'data', job.data, 'createdAt', job.createdAt, 'runAt', job.runAt,
    'status', job.status, 'attempts', job.attempts, 'handler', job.handler }
  if job.tenant then
    fields[#fields + 1] = 'tenant'
    fields[#fields + 1] = job.tenant
  end
  if job.scheduleId then
    fields[#fields + 1] = 'scheduleId'
    fields[#fields + 1] = job.scheduleId
  end
  if job.overlap then
    fields[#fields + 1] = 'overlap'
    fields[#fields + 1] = job.overlap
  end
  if job.onStream then
    fields[#fields + 1] = 'onStream'
    fields[#fields + 1] = job.onStream
  end
  redis.call('HSET', jobKey(root, id), unpack(fields))
  if not listed then
    redis.call('ZADD', jobsKey(root, jobTenant(job)), job.createdAt, id)
  end
  -- A late delivery of a deleted schedule's occurrence is not listed under a schedule that
  -- re-uses the id: a schedule's runs belong to the schedule as it exists.
  if job.scheduleId and redis.call('EXISTS', scheduleKey(root, job.scheduleId)) == 1 then
    redis.call('ZADD', runsKey(root, job.scheduleId), runsScore, id)
  end
  return job
end

local function submittedBefore(root, id)
  local f = redis.call('HMGET', jobKey(root, id), 'createdAt', 'runAt', 'status', 'finishedAt',
    'held')
  if not f[1] then
    return nil
  end
  local out = '{"createdAt":' .. f[1] .. ',"runAt":' .. f[2]
  -- Stored waiting (`held`, kept once released or cancelled), or waiting now.
  if f[5] == 'waiting' or f[3] == 'waiting' then
    out = out .. ',"status":"waiting"'
  elseif f[3] == 'cancelled' and f[4] == f[1] then
    out = out .. ',"status":"cancelled","finishedAt":' .. f[4]
  end
  return out .. '}'
end

local function takeListing(root, listing, id, now)
  if redis.call('ZADD', listing, 'NX', int(now), id) == 0 then
    local again = submittedBefore(root, id)
    if again then
      return again
    end
    -- The entry of an expired job of this id, not swept yet: the new job is listed as new.
    redis.call('ZADD', listing, int(now), id)
  end
  return nil
end

local function specJson(job)
  return jsonExtend(job.data, '"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt)
end

-- One concatenation (Lua makes one string of it), no table: the JSON is built for every answer
-- that carries a job, and each intermediate string costs Lua an allocation and a hash.
local function jobJson(job, before)
  local data, startedAt, finishedAt, result = job.data, job.startedAt, job.finishedAt, job.result
  local err, base, progress, node, refused = job.error, job.attemptBase, job.progress, job.node,
    job.refused
  local empty = data == '{}'
  return (before or '') .. (empty and '{' or string.sub(data, 1, -2)) .. (empty and '' or ',')
    .. '"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt
    .. ',"status":"' .. job.status .. '","attempts":' .. job.attempts
    .. (startedAt and ',"startedAt":' or '') .. (startedAt or '')
    .. (finishedAt and ',"finishedAt":' or '') .. (finishedAt or '')
    .. (result and ',"result":' or '') .. (result or '')
    .. (err and ',"error":' or '') .. (err or '')
    .. (base and ',"attemptBase":' or '') .. (base or '')
    .. (progress and ',"progress":{"value":' or '') .. (progress or '')
    .. (progress and ',"at":' or '') .. (progress and job.progressAt or '') .. (progress and '}' or '')
    .. (job.cancelRequested and ',"cancelRequested":true' or '')
    .. (node and ',"node":' or '') .. (node and jsonString(node) or '')
    .. (refused and ',"refused":' or '') .. (refused or '') .. (before and '}}' or '}')
end

local function expiringMember(id, job)
  -- cjson.encode({ id, tenant[, scheduleId] }) as it answers, without the table.
  local scheduleId = job.scheduleId
  return '[' .. jsonString(id) .. ',' .. jsonString(jobTenant(job))
    .. (scheduleId and ',' or '') .. (scheduleId and jsonString(scheduleId) or '') .. ']'
end

-- A finished job dropped before its time (a retention cap): its record and index entries go; an
-- occurrence leaves a tombstone for at most an hour, so a late delivery of it does not bring it
-- back to run again.
local function dropFinished(root, expiring, id, now)
  local key = jobKey(root, id)
  local f = redis.call('HMGET', key, 'status', 'tenant', 'scheduleId', 'keepUntil')
  if not f[1] then
    -- Its record expired and its index entries wait for the sweep: the caller's to forget.
    return false, false, true
  end
  if not FINAL_STATUSES[f[1]] then
    return false
  end
  -- Its idempotency key still lives (a webhook job): dropped, a redelivery would run it twice.
  if tonumber(f[4] or 0) > now then
    return false, true
  end
  local job = { tenant = f[2], scheduleId = f[3] }
  local ttl = redis.call('PTTL', key)
  redis.call('DEL', key)
  redis.call('ZREM', expiring, expiringMember(id, job))
  redis.call('ZREM', jobsKey(root, jobTenant(job)), id)
  redis.call('ZREM', dlqKey(root, jobTenant(job)), id)
  if job.scheduleId then
    redis.call('ZREM', runsKey(root, job.scheduleId), id)
    if ttl > 0 then
      redis.call('SET', goneKey(root, id), '1', 'PX', math.min(ttl, 3600000))
    end
  end
  return true
end

-- The index entries of a job whose expiring member goes: every one when its record is gone; when
-- a late delivery made it again since (a schedule's occurrence), only its dead-letter entry,
-- unless it is dead again: the listing and the runs list hold the job as it is now.
local function forgetIndexed(root, id, tenant, scheduleId)
  local status = redis.call('HGET', jobKey(root, id), 'status')
  if not status then
    redis.call('ZREM', jobsKey(root, tenant), id)
    redis.call('ZREM', dlqKey(root, tenant), id)
    if scheduleId then
      redis.call('ZREM', runsKey(root, scheduleId), id)
    end
  elseif status ~= 'dead' then
    redis.call('ZREM', dlqKey(root, tenant), id)
  end
end

-- The last retention text parsed, and its numbers: every finished job of a script call (and
-- nearly every call) passes the same text.
local retentionText, retentionParsed

local function parseRetention(retention)
  if retention ~= retentionText then
    local jobMs, maxJobs, maxRuns = string.match(retention, '^(%d+) (%d+) (%d+)$')
    jobMs = tonumber(jobMs)
    -- jobMs's text too: the TTL every finished job gets.
    retentionParsed = { jobMs, tonumber(maxJobs), tonumber(maxRuns), int(jobMs) }
    retentionText = retention
  end
  return retentionParsed[1], retentionParsed[2], retentionParsed[3], retentionParsed[4]
end

local function retainJob(root, expiring, id, job, now, retention)
  local jobMs, maxJobs, maxRuns, jobMsText = parseRetention(retention)
  -- Never before its idempotency key (keepUntil): a redelivered webhook event must replay it.
  local keepUntil = job.keepUntil
  local expiresAt, ttl = now + jobMs, jobMsText
  if keepUntil and tonumber(keepUntil) > expiresAt then
    expiresAt = tonumber(keepUntil)
    ttl = int(expiresAt - now)
  end
  redis.call('PEXPIRE', jobKey(root, id), ttl)
  redis.call('ZADD', expiring, int(expiresAt), expiringMember(id, job))
  if maxRuns > 0 and job.scheduleId then
    local runs = runsKey(root, job.scheduleId)
    local over = redis.call('ZCARD', runs) - maxRuns
    if over > 0 then
      -- The oldest runs may still be running or waiting for a retry: look past them (a bounded
      -- 20) for finished ones, so unfinished runs never hold the cap open.
      local dropped = 0
      for _, old in ipairs(redis.call('ZRANGE', runs, 0, 19)) do
        if dropped >= math.min(over, 2) then
          break
        end
        if old ~= id then
          local gone, _, missing = dropFinished(root, expiring, old, now)
          if missing then
            -- An expired run the sweep has not reached: its entry counted, and goes now.
            redis.call('ZREM', runs, old)
          end
          if gone or missing then
            dropped = dropped + 1
          end
        end
      end
    end
  end
  if maxJobs > 0 then
    local over = redis.call('ZCARD', expiring) - maxJobs
    if over > 0 then
      -- The oldest may be kept (a webhook job whose key still lives): look past them (a bounded
      -- 20) for droppable ones, so kept jobs never hold the cap open for the others.
      local dropped = 0
      for _, member in ipairs(redis.call('ZRANGE', expiring, 0, 19)) do
        if dropped >= math.min(over, 2) then
          break
        end
        local entry = cjson.decode(member)
        local old = entry[1]
        if old ~= id then
          local gone, kept = dropFinished(root, expiring, old, now)
          if gone then
            dropped = dropped + 1
          elseif not kept then
            -- Its record already expired (or a late delivery made it again, unfinished): its
            -- member goes, and the index entries the sweep would have forgotten with it.
            forgetIndexed(root, old, entry[2], entry[3])
            redis.call('ZREM', expiring, member)
            dropped = dropped + 1
          end
        end
      end
    end
  end
end

local function keepJob(root, expiring, id, job)
  redis.call('PERSIST', jobKey(root, id))
  redis.call('ZREM', expiring, expiringMember(id, job))
end

local function releaseSlot(key, id, job)
  if job.slot then
    redis.call('ZREM', job.slot, id)
    redis.call('HDEL', key, 'slot')
    job.slot = nil
  end
end

local function leaseToRunning(root, scheduleId, except, now)
  local running = scheduleRunningKey(root, scheduleId)
  local runs = redis.call('ZREVRANGEBYSCORE', runsKey(root, scheduleId), int(now), '-inf',
    'LIMIT', 0, 200)
  for _, run in ipairs(runs) do
    if run ~= except then
      local key = jobKey(root, run)
      local f = redis.call('HMGET', key, 'status', 'leaseUntil')
      local left = f[1] == 'running' and tonumber(f[2] or '') and tonumber(f[2]) - now
      if left and left > 0 then
        redis.call('SET', running, run, 'PX', math.ceil(left))
        redis.call('HSET', key, 'overlapHeld', '1')
        return run
      end
    end
  end
  redis.call('DEL', running)
  return nil
end

local function releaseRun(root, key, id, job)
  if job.leaseUntil and job.slot then
    redis.call('ZREM', job.slot, id)
    redis.call('HDEL', key, 'leaseUntil', 'slot')
    job.leaseUntil, job.slot = nil, nil
  elseif job.leaseUntil then
    redis.call('HDEL', key, 'leaseUntil')
    job.leaseUntil = nil
  end
  releaseSlot(key, id, job)
  if job.overlap == 'skip' and job.scheduleId then
    local running = scheduleRunningKey(root, job.scheduleId)
    if redis.call('GET', running) == id then
      redis.call('DEL', running)
    end
  elseif job.overlapHeld and job.scheduleId then
    redis.call('HDEL', key, 'overlapHeld')
    job.overlapHeld = nil
    if redis.call('GET', scheduleRunningKey(root, job.scheduleId)) == id then
      leaseToRunning(root, job.scheduleId, id, nowMs())
    end
  end
end

local function sweepExpired(root, expiring, now, max)
  local members = redis.call('ZRANGEBYSCORE', expiring, '-inf', int(now), 'LIMIT', 0, max)
  if #members == 0 then
    return
  end
  for _, member in ipairs(members) do
    local entry = cjson.decode(member)
    forgetIndexed(root, entry[1], entry[2], entry[3])
  end
  redis.call('ZREM', expiring, unpack(members))
end
