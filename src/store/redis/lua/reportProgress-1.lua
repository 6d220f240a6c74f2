--[[
  reportProgress: replace a running job's progress, only if `attempt` holds its run lease.
  Input:
    KEYS[1] root
    ARGV[1] id
    ARGV[2] attempt
    ARGV[3] the value, JSON text (bounded in TS)
  Output: JSON text
    {"ok":true,"cancelRequested":bool} written | {"stale":true} nothing written
]]
--@include "time"
--@include "keys"
--@include "attempt"

local key = jobKey(KEYS[1], ARGV[1])
local now = nowMs()
local f = attemptHolder(key, ARGV[2], now)
if not f then
  return '{"stale":true}'
end
redis.call('HSET', key, 'progress', ARGV[3], 'progressAt', int(now))
return attemptAnswer(f)
