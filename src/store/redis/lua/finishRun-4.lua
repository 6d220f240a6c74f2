--[[
  finishRun: record how an attempt ended, only if the job is `running` as that attempt.
  Success -> `succeeded` with the result (and no error); failure -> `failed`, or `dead` and
  listed in the dead-letter list when final. Releases the run lease and the schedule's overlap
  lease. Final records are retained jobMs. Then sweeps up to 20 expired jobs from the listing
  indexes (bounded housekeeping; the records themselves expire by TTL).
  Input:
    KEYS[1] root
    KEYS[2] jobs index
    KEYS[3] dead-letter list (zset: job id -> died at)
    KEYS[4] expiring index
    ARGV[1] id
    ARGV[2] attempt
    ARGV[3] 1 success, 0 failure
    ARGV[4] result JSON ('' = none), on success
    ARGV[5] JobError JSON, on failure
    ARGV[6] 1 final failure (-> dead), 0 will retry
    ARGV[7] jobMs (retention)
  Output:
    JOB_NOT_FOUND (-2)
    JSON text   {"ok":JobRecord} recorded, or {"stale":JobRecord} not running as that attempt
]]
--@include "time"
--@include "keys"
--@include "errors"
--@include "job"

local root, jobs, dlq, expiring = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id = ARGV[1]
local key = jobKey(root, id)
local job = readJob(key)
if not job then
  return JOB_NOT_FOUND
end
if job.status ~= 'running' or tonumber(job.attempts) ~= tonumber(ARGV[2]) then
  return '{"stale":' .. jobJson(job) .. '}'
end

local now = nowMs()
releaseRun(root, key, id, job)
job.finishedAt = int(now)
if ARGV[3] == '1' then
  job.status, job.error = 'succeeded', nil
  redis.call('HDEL', key, 'error')
  if ARGV[4] ~= '' then
    job.result = ARGV[4]
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'result', job.result)
  else
    job.result = nil
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
    redis.call('HDEL', key, 'result')
  end
  retainJob(root, expiring, id, job, now, ARGV[7])
else
  job.error = ARGV[5]
  job.status = ARGV[6] == '1' and 'dead' or 'failed'
  redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'error', job.error)
  if job.status == 'dead' then
    redis.call('ZADD', dlq, int(now), id)
    retainJob(root, expiring, id, job, now, ARGV[7])
  end
end

sweepExpired(root, expiring, jobs, dlq, now, 20)
return '{"ok":' .. jobJson(job) .. '}'
