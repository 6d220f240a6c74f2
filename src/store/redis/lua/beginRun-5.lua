--[[
  beginRun: a delivery arrived. Creates the job from the spec if missing and it has a
  scheduleId (else answers missing, writing nothing), removes its outbox message (the consumer
  acknowledges), then decides:
    final status                                   -> final (do not run)
    running with an unexpired run lease            -> busy (the queue retries later)
    overlap `skip` and another job of the schedule holds the schedule's run lease
                                                   -> the job is `skipped` (and retained) if it
                                                      never started (attempts 0), else busy
    else `running`, attempts + 1, startedAt = now, run lease until now + leaseMs (and the
    schedule's run lease, for overlap `skip`).
  Input:
    KEYS[1] root
    KEYS[2] jobs index
    KEYS[3] outbox
    KEYS[4] outbox messages
    KEYS[5] expiring index
    ARGV[1..8] the JobSpec (see include "spec")
    ARGV[9] leaseMs
    ARGV[10] jobMs (retention)
  Output: JSON text
    {"kind":"run","attempt":n,"job":JobRecord} | {"kind":"final","job":JobRecord}
    {"kind":"busy","retryAfterMs":ms}          | {"kind":"skipped","job":JobRecord}
    {"kind":"missing"}
]]
--@include "time"
--@include "keys"
--@include "outbox"
--@include "job"
--@include "spec"

local root = KEYS[1]
local now = nowMs()
local id, key, job = jobFromArgv(root, KEYS[2], 1)
if not job then
  return '{"kind":"missing"}'
end
removeMessages(KEYS[3], KEYS[4], { id })

if FINAL_STATUSES[job.status] then
  return '{"kind":"final","job":' .. jobJson(job) .. '}'
end
if job.status == 'running' and job.leaseUntil and tonumber(job.leaseUntil) > now then
  return '{"kind":"busy","retryAfterMs":' .. int(tonumber(job.leaseUntil) - now) .. '}'
end

local leaseMs = tonumber(ARGV[9])
if job.overlap == 'skip' and job.scheduleId then
  local running = scheduleRunningKey(root, job.scheduleId)
  local holder = redis.call('GET', running)
  if holder and holder ~= id then
    if tonumber(job.attempts) > 0 then
      local ttl = redis.call('PTTL', running)
      return '{"kind":"busy","retryAfterMs":' .. math.max(ttl, 0) .. '}'
    end
    job.status, job.finishedAt = 'skipped', int(now)
    redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
    releaseRun(root, key, id, job)
    retainJob(root, KEYS[5], id, job, now, ARGV[10])
    return '{"kind":"skipped","job":' .. jobJson(job) .. '}'
  end
  redis.call('SET', running, id, 'PX', leaseMs)
end

job.status, job.startedAt, job.finishedAt = 'running', int(now), nil
job.attempts = int(redis.call('HINCRBY', key, 'attempts', 1))
redis.call('HSET', key, 'status', job.status, 'startedAt', job.startedAt, 'leaseUntil', int(now + leaseMs))
redis.call('HDEL', key, 'finishedAt')
return '{"kind":"run","attempt":' .. job.attempts .. ',"job":' .. jobJson(job) .. '}'
