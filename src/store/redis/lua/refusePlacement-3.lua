--[[
  refusePlacement: a node refused to run a job for its placement. While the job waits for a run
  (`queued` or `failed`), records the refusal as the job's `refused` field (JSON
  `{"node":…,"reason":…,"at":ms}`, the last one wins), counts t:unplaced and moves the job's
  outbox watch to now + reapAfterMs (XX: only an existing one), as a `limited` begin does. A
  running, finished or missing job is left as it is.
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] metrics
    ARGV[1] id
    ARGV[2] the refusal as JSON, without `at` (`{"node":…,"reason":…}`)
    ARGV[3] reapAfterMs
  Output: the job's status ('' when missing: then only t:unplaced is counted)
]]
--@include "time"
--@include "keys"
--@include "json"

local key = jobKey(KEYS[1], ARGV[1])
local status = redis.call('HGET', key, 'status')
if not status then
  redis.call('HINCRBY', KEYS[3], 't:unplaced', 1)
  return ''
end
if status ~= 'queued' and status ~= 'failed' then
  return status
end
local now = nowMs()
redis.call('HSET', key, 'refused', jsonExtend(ARGV[2], '"at":' .. int(now)))
redis.call('ZADD', KEYS[2], 'XX', int(now + tonumber(ARGV[3])), ARGV[1])
redis.call('HINCRBY', KEYS[3], 't:unplaced', 1)
return status
