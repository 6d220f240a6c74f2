--[[
  Include "job" (needs "keys", "json", "time"): the job hash and its JSON.

  Job hash `<root>:j:<id>` fields:
    data        JobSpec JSON without createdAt and runAt (JSON.stringify'd in TS)
    createdAt   ms            runAt        ms (may change: retryDead sets it to now)
    status      JobStatus     attempts     attempts begun
    startedAt   ms, optional  finishedAt   ms, optional
    leaseUntil  ms, while running (the run lease)
    result      JSON, optional             error  JobError JSON, optional
    handler, scheduleId, overlap, tenant   copies of spec fields, for filters, overlap checks
                                           and events (tenant may be absent on older jobs)

  readJob(key)                 Lua table of the present fields, or nil when the job is missing.
  createJob(root, jobs, id, job, runsScore)
                               Writes a new `queued` job from job.data/createdAt/runAt/handler/
                               tenant/scheduleId/overlap and indexes it (jobs by createdAt, the
                               schedule's runs by runsScore).
  specJson(job)                The JobSpec JSON (data plus createdAt and runAt).
  jobJson(job)                 The JobRecord JSON.
  retainJob(root, expiring, id, job, now, jobMs)
                               A job reached a final state: keep it `jobMs`, then it expires.
  keepJob(root, expiring, id, job)
                               Undo retainJob (a dead job queued again).
  releaseRun(root, key, id, job)
                               Drop the run lease and, if this job holds it, the schedule's
                               overlap lease.
  sweepExpired(root, expiring, jobs, dlq, now, max)
                               Remove up to `max` expired jobs from the listing indexes.
]]
--@include "time"
--@include "keys"
--@include "json"

local FINAL_STATUSES = { succeeded = true, dead = true, cancelled = true, skipped = true }

local JOB_FIELDS = { 'data', 'createdAt', 'runAt', 'status', 'attempts', 'startedAt',
  'finishedAt', 'leaseUntil', 'result', 'error', 'handler', 'scheduleId', 'overlap', 'tenant' }

local function readJob(key)
  local values = redis.call('HMGET', key, unpack(JOB_FIELDS))
  if not values[1] then
    return nil
  end
  local job = {}
  for i, name in ipairs(JOB_FIELDS) do
    if values[i] then
      job[name] = values[i]
    end
  end
  return job
end

local function createJob(root, jobs, id, job, runsScore)
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
  redis.call('HSET', jobKey(root, id), unpack(fields))
  redis.call('ZADD', jobs, job.createdAt, id)
  if job.scheduleId then
    redis.call('ZADD', runsKey(root, job.scheduleId), runsScore, id)
  end
  return job
end

local function specJson(job)
  return jsonExtend(job.data, '"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt)
end

local function jobJson(job)
  local m = { '"createdAt":' .. job.createdAt, '"runAt":' .. job.runAt,
    '"status":"' .. job.status .. '"', '"attempts":' .. job.attempts }
  if job.startedAt then
    m[#m + 1] = '"startedAt":' .. job.startedAt
  end
  if job.finishedAt then
    m[#m + 1] = '"finishedAt":' .. job.finishedAt
  end
  if job.result then
    m[#m + 1] = '"result":' .. job.result
  end
  if job.error then
    m[#m + 1] = '"error":' .. job.error
  end
  return jsonExtend(job.data, table.concat(m, ','))
end

local function expiringMember(id, job)
  if job.scheduleId then
    return cjson.encode({ id, job.scheduleId })
  end
  return cjson.encode({ id })
end

local function retainJob(root, expiring, id, job, now, jobMs)
  redis.call('PEXPIRE', jobKey(root, id), jobMs)
  redis.call('ZADD', expiring, int(now + tonumber(jobMs)), expiringMember(id, job))
end

local function keepJob(root, expiring, id, job)
  redis.call('PERSIST', jobKey(root, id))
  redis.call('ZREM', expiring, expiringMember(id, job))
end

local function releaseRun(root, key, id, job)
  if job.leaseUntil then
    redis.call('HDEL', key, 'leaseUntil')
    job.leaseUntil = nil
  end
  if job.overlap == 'skip' and job.scheduleId then
    local running = scheduleRunningKey(root, job.scheduleId)
    if redis.call('GET', running) == id then
      redis.call('DEL', running)
    end
  end
end

local function sweepExpired(root, expiring, jobs, dlq, now, max)
  local members = redis.call('ZRANGEBYSCORE', expiring, '-inf', int(now), 'LIMIT', 0, max)
  if #members == 0 then
    return
  end
  local gone = {}
  for _, member in ipairs(members) do
    local entry = cjson.decode(member)
    -- A job re-created under the same id since (a late delivery) keeps its index entries.
    if redis.call('EXISTS', jobKey(root, entry[1])) == 0 then
      gone[#gone + 1] = entry[1]
      if entry[2] then
        redis.call('ZREM', runsKey(root, entry[2]), entry[1])
      end
    end
  end
  if #gone > 0 then
    redis.call('ZREM', jobs, unpack(gone))
    redis.call('ZREM', dlq, unpack(gone))
  end
  redis.call('ZREM', expiring, unpack(members))
end
