--[[
  stats: every counter, gauge and histogram, the leader and the degradation state, in one round
  trip. With a policy, evaluates the degradation controller first (may change the level).
  Input:
    KEYS[1] metrics (hash)
    KEYS[2] outbox (zset)
    KEYS[3] pending backlog (zset)
    KEYS[4] tick lease
    KEYS[5] leader (hash)
    KEYS[6] degradation state (hash)
    KEYS[7] events (stream)
    KEYS[8] root (the Redis Streams queue's keys are under it: include "streams")
    ARGV[1] degradation policy ('' = none; see include "degrade")
    ARGV[2] eventsMaxLen (0 = no events)
  Output: JSON text {"now":ms,"metrics":{field:"value"...},"outbox":n,"backlog":n (the due
    backlog: include "streams", dueBacklog),"onStream":n (the jobs queued outside the backlog
    index, as counted after dueBacklog: queuedOnStream),
    "leaseRemainingMs":pttl,"leader":{field:"value"...},"degradation":{field:"value"...}}
]]
--@include "time"
--@include "json"
--@include "events"
--@include "keys"
--@include "metrics"
--@include "degrade"
--@include "streams"

local function hashJson(flat)
  local m = {}
  for i = 1, #flat - 1, 2 do
    m[#m + 1] = jsonString(flat[i]) .. ':' .. jsonString(flat[i + 1])
  end
  return '{' .. table.concat(m, ',') .. '}'
end

local now = nowMs()
local metrics = redis.call('HGETALL', KEYS[1])
local known = {}
for i = 1, #metrics - 1, 2 do
  known[metrics[i]] = metrics[i + 1]
end
for _, field in ipairs({ 's:in', 's:out' }) do
  known[field] = tonumber(known[field]) or 0
end
-- The member `deps:todo` (include "deps") is a note for the next tick, not a message.
local outbox = redis.call('ZCARD', KEYS[2])
if outbox > 0 and redis.call('ZSCORE', KEYS[2], 'deps:todo') then
  outbox = outbox - 1
end
local backlog = dueBacklog(KEYS[8], KEYS[3], KEYS[1], known, now)
local pttl = redis.call('PTTL', KEYS[4])
local leader = redis.call('HGETALL', KEYS[5])
if ARGV[1] ~= '' then
  evaluateDegradation(KEYS[6], KEYS[7], tonumber(ARGV[2]), parsePolicy(ARGV[1]), backlog,
    tonumber(known['avg:lag']) or 0, tonumber(known['avg:fail']) or 0, now,
    tonumber(known['g:running']) or 0)
end
local degrade = redis.call('HGETALL', KEYS[6])
return '{"now":' .. int(now) .. ',"metrics":' .. hashJson(metrics) .. ',"outbox":' .. outbox
  .. ',"backlog":' .. backlog .. ',"onStream":' .. int(math.max(0, known['s:in'] - known['s:out']))
  .. ',"leaseRemainingMs":' .. pttl .. ',"leader":' .. hashJson(leader)
  .. ',"degradation":' .. hashJson(degrade) .. '}'
