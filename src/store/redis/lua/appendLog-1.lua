--[[
  appendLog: append an entry to a running job's log, only if `attempt` holds its run lease. The
  entry is stamped with `at` (now) and `attempt`; the log keeps its last 100 entries (the oldest
  is dropped). Entries are fields of the job hash (see include "attempt"): they expire and are
  deleted with the job.
  Input:
    KEYS[1] root
    ARGV[1] id
    ARGV[2] attempt
    ARGV[3] the entry, JSON text `{level, message, fields?}` (bounded in TS)
  Output: JSON text
    {"ok":true,"cancelRequested":bool} written | {"stale":true} nothing written
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "attempt"

local key = jobKey(KEYS[1], ARGV[1])
local now = nowMs()
local f = attemptHolder(key, ARGV[2], now)
if not f then
  return '{"stale":true}'
end
local seq = (tonumber(f.logSeq) or 0) + 1
local entry = jsonExtend(ARGV[3], '"at":' .. int(now) .. ',"attempt":' .. int(tonumber(ARGV[2])))
redis.call('HSET', key, 'log:' .. int(seq), entry, 'logSeq', int(seq))
if seq > LOG_KEEP then
  redis.call('HDEL', key, 'log:' .. int(seq - LOG_KEEP))
end
return attemptAnswer(f)
