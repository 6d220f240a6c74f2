--[[
  markDead: the queue gave up on a delivery. Creates the job from the spec if missing and it has
  a scheduleId (else returns null, writing nothing); unless it is already dead, succeeded,
  cancelled or skipped, its runAt differs from the spec's (a callback for an earlier dispatch),
  or it is running with an unexpired run lease (then returned unchanged), marks it `dead`
  with the error, lists it in the dead-letter list, releases its run leases, drops its outbox
  message and retains the record jobMs.
  Input:
    KEYS[1] root
    KEYS[2] jobs index
    KEYS[3] dead-letter list
    KEYS[4] outbox
    KEYS[5] outbox messages
    KEYS[6] expiring index
    ARGV[1..8] the JobSpec (see include "spec")
    ARGV[9] JobError JSON
    ARGV[10] jobMs (retention)
  Output: JobRecord JSON text, or `null`
]]
--@include "time"
--@include "keys"
--@include "outbox"
--@include "job"
--@include "spec"

local root = KEYS[1]
local id, key, job = jobFromArgv(root, KEYS[2], 1)
if not job then
  return 'null'
end
if job.status == 'dead' or job.status == 'succeeded' or job.status == 'cancelled'
  or job.status == 'skipped' or tonumber(job.runAt) ~= tonumber(ARGV[4]) then
  return jobJson(job)
end
local now = nowMs()
if job.status == 'running' and job.leaseUntil and tonumber(job.leaseUntil) > now then
  return jobJson(job)
end
releaseRun(root, key, id, job)
removeMessages(KEYS[4], KEYS[5], { id })
job.status, job.finishedAt, job.error = 'dead', int(now), ARGV[9]
redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt, 'error', job.error)
redis.call('ZADD', KEYS[3], job.finishedAt, id)
retainJob(root, KEYS[6], id, job, now, ARGV[10])
return jobJson(job)
