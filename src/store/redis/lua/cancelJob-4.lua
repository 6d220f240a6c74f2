--[[
  cancelJob: `queued` -> `cancelled`, its outbox message removed, the record retained jobMs.
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages
    KEYS[4] expiring index (zset: retained job -> expiry ms)
    ARGV[1] id
    ARGV[2] jobMs (retention)
  Output:
    JOB_NOT_FOUND (-2)
    JSON text   {"ok":JobRecord} cancelled, or {"conflict":JobRecord} not queued any more
]]
--@include "time"
--@include "keys"
--@include "errors"
--@include "outbox"
--@include "job"

local root, id = KEYS[1], ARGV[1]
local key = jobKey(root, id)
local job = readJob(key)
if not job then
  return JOB_NOT_FOUND
end
if job.status ~= 'queued' then
  return '{"conflict":' .. jobJson(job) .. '}'
end
local now = nowMs()
job.status, job.finishedAt = 'cancelled', int(now)
redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
removeMessages(KEYS[2], KEYS[3], { id })
retainJob(root, KEYS[4], id, job, now, ARGV[2])
return '{"ok":' .. jobJson(job) .. '}'
