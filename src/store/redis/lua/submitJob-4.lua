--[[
  submitJob: accept a job in one round trip. If the tenant's idempotency key is known (and its
  job still exists) returns that job and writes nothing. Else stamps createdAt = now and
  runAt = runAt or now + delayMs, writes the `queued` job, indexes it, remembers the key and
  puts the job's message in the outbox.
  Input:
    KEYS[1] root
    KEYS[2] jobs index (zset: job id -> createdAt)
    KEYS[3] outbox
    KEYS[4] outbox messages
    ARGV[1] id
    ARGV[2] id as a JSON string
    ARGV[3] JobSpec JSON without createdAt and runAt
    ARGV[4] runAt ('' = now + delayMs)
    ARGV[5] delayMs
    ARGV[6] recoverGraceMs
    ARGV[7] tenant
    ARGV[8] idempotency key ('' = none)
    ARGV[9] idempotencyMs
    ARGV[10] handler
    ARGV[11] scheduleId ('' = none)
    ARGV[12] overlap ('' = none)
    ARGV[13] fireAt ('' = none; the runs index score, else runAt)
  Output: JSON text
    {"createdAt":ms,"runAt":ms}   written; the caller knows the rest of the job and message
    {"replayed":JobRecord}        the key was used: the first job
]]
--@include "time"
--@include "keys"
--@include "outbox"
--@include "job"

local root, jobs, outbox, messages = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, idJson = ARGV[1], ARGV[2]
local now = nowMs()

local idemKey
if ARGV[8] ~= '' then
  idemKey = idempotencyKey(root, ARGV[7], ARGV[8])
  local firstId = redis.call('GET', idemKey)
  if firstId then
    local first = readJob(jobKey(root, firstId))
    if first then
      return '{"replayed":' .. jobJson(first) .. '}'
    end
  end
end

local runAt = now + tonumber(ARGV[5])
if ARGV[4] ~= '' then
  runAt = tonumber(ARGV[4])
end
local job = { data = ARGV[3], createdAt = int(now), runAt = int(runAt), handler = ARGV[10] }
if ARGV[11] ~= '' then
  job.scheduleId = ARGV[11]
end
if ARGV[12] ~= '' then
  job.overlap = ARGV[12]
end
local runsScore = job.runAt
if ARGV[13] ~= '' then
  runsScore = ARGV[13]
end
createJob(root, jobs, id, job, runsScore)

local recoverAt = int(runAt + tonumber(ARGV[6]))
putMessage(outbox, messages, id, recoverAt, '{"id":' .. idJson .. ',"dedupId":' .. idJson
  .. ',"job":' .. specJson(job) .. ',"notBefore":' .. job.runAt .. ',"recoverAt":' .. recoverAt .. '}')

if idemKey then
  redis.call('SET', idemKey, id, 'PX', ARGV[9])
end
return '{"createdAt":' .. job.createdAt .. ',"runAt":' .. job.runAt .. '}'
