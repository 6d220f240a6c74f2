--[[
  beginTick: first step of a tick. Reads the clock and peeks at the due index and the outbox;
  when nothing is due and nothing needs recovery it returns WITHOUT writing (inner calls: TIME,
  ZRANGE, ZRANGE, PTTL = 4; nothing else is read there). Otherwise takes the tick lease (or
  reports it busy, also without writing) and, as leader: records a holder change (`{p}:leader`,
  a `leader.changed` event), evaluates the degradation controller when a policy is given (else
  reads the stored level), counts t:ticks and t:recovered, and returns the first chunk of due
  schedules plus the outbox messages to re-publish, whose recoverAt is pushed to
  now + recoverGraceMs (an attempt's watch, a message with `attempt`: now + reapAfterMs, and its
  `reaps` count goes up by one).
  Input:
    KEYS[1] root (hash tag, `{prefix}`)
    KEYS[2] due index (zset: schedule id -> nextRunAt)
    KEYS[3] outbox (zset: message id -> recoverAt)
    KEYS[4] outbox messages (hash: message id -> OutboxMessage JSON)
    KEYS[5] tick lease
    KEYS[6] lease sequence
    KEYS[7] pending backlog
    KEYS[8] metrics
    KEYS[9] events
    KEYS[10] degradation state
    KEYS[11] leader (hash: holder, acquiredAt, changes, flaps)
    ARGV[1] leaseMs
    ARGV[2] horizonMs
    ARGV[3] limit
    ARGV[4] recoverLimit
    ARGV[5] recoverGraceMs
    ARGV[6] eventsMaxLen (0 = no events)
    ARGV[7] holder ('' = none: the leader hash is not touched)
    ARGV[8] flap window ms
    ARGV[9] degradation policy ('' = none; see include "degrade")
    ARGV[10] reapAfterMs
    ARGV[11] retention (as the store's other scripts take it)
  The outbox member `deps:todo` (include "deps": a release of dependents capped at its budget)
  is no message: the leader continues that release instead (releaseDependents), and the member
  is put back, due now, while some is left.
  Output: JSON text
    {"kind":"idle"|"busy","now":ms,"leaseRemainingMs":ms}
    {"kind":"leader","now":ms,"token":n,"degradation":level,"leaderChanged"?:{"previous":..},
     "more":bool,"due":[ScheduleRecord...],
     "recover":[[OutboxMessage, recoverAt]...]}   (recoverAt overrides the one in the message)
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "schedule"
--@include "due"
--@include "metrics"
--@include "events"
--@include "degrade"
--@include "members"
--@include "outbox"
--@include "streams"
--@include "deps"

local root, due, outbox, messages, lease, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local now = nowMs()
local horizonEnd = now + tonumber(ARGV[2])

local firstDue = redis.call('ZRANGE', due, 0, 0, 'WITHSCORES')
local firstRecover = redis.call('ZRANGE', outbox, 0, 0, 'WITHSCORES')
local pttl = redis.call('PTTL', lease)

local hasDue = firstDue[2] ~= nil and tonumber(firstDue[2]) <= horizonEnd
local hasRecover = firstRecover[2] ~= nil and tonumber(firstRecover[2]) <= now
if not hasDue and not hasRecover then
  return '{"kind":"idle","now":' .. int(now) .. ',"leaseRemainingMs":' .. math.max(pttl, 0) .. '}'
end
if pttl ~= -2 then
  return '{"kind":"busy","now":' .. int(now) .. ',"leaseRemainingMs":' .. math.max(pttl, 0) .. '}'
end

local token = redis.call('INCR', seq)
redis.call('SET', lease, token, 'PX', ARGV[1])

local pending, metrics, events, degrade, leader = KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local maxLen = tonumber(ARGV[6])
local out = {}

local holder = ARGV[7]
if holder ~= '' then
  local l = redis.call('HMGET', leader, 'holder', 'acquiredAt', 'changes', 'flaps')
  if l[1] ~= holder then
    local flaps = tonumber(l[4]) or 0
    if l[2] and now - tonumber(l[2]) < tonumber(ARGV[8]) then
      flaps = flaps + 1
    end
    redis.call('HSET', leader, 'holder', holder, 'acquiredAt', int(now), 'changes',
      int((tonumber(l[3]) or 0) + 1), 'flaps', int(flaps))
    local previous = l[1] and jsonString(l[1]) or 'null'
    emitEvent(events, maxLen, '{"type":"leader.changed","at":' .. int(now) .. ',"holder":'
      .. jsonString(holder) .. ',"previous":' .. previous .. '}')
    out[#out + 1] = '"leaderChanged":{"previous":' .. previous .. '}'
  end
end

local known, level
if ARGV[9] ~= '' then
  known = metricsLoad(metrics,
    { 'avg:lag', 'avg:fail', 't:ticks', 't:recovered', 's:in', 's:out', 'g:running' })
  local depth = dueBacklog(root, pending, metrics, known, now)
  level = evaluateDegradation(degrade, events, maxLen, parsePolicy(ARGV[9]), depth,
    known['avg:lag'], known['avg:fail'], now, known['g:running'])
else
  level = redis.call('HGET', degrade, 'level') or 'normal'
end

local dueItems, more = {}, false
if hasDue then
  dueItems, more = readDue(root, due, horizonEnd, tonumber(ARGV[3]))
end

local recover = {}
local recoverLimit = tonumber(ARGV[4])
-- A capped release of dependents to go on with (include "deps"), asked by the outbox member.
local continued = false
if hasRecover and recoverLimit > 0 then
  local ids = redis.call('ZRANGEBYSCORE', outbox, '-inf', int(now), 'LIMIT', 0, recoverLimit)
  for i, id in ipairs(ids) do
    if id == DEPS_TODO then
      table.remove(ids, i)
      redis.call('ZREM', outbox, DEPS_TODO)
      continued = true
      break
    end
  end
  local recoverAt = int(now + tonumber(ARGV[5]))
  local watchAt = int(now + tonumber(ARGV[10]))
  for from = 1, #ids, 500 do
    local slice = { unpack(ids, from, math.min(from + 499, #ids)) }
    local bodies = messageBodies(root, messages, slice, recoverAt)
    local pushed, stale, counted = {}, {}, {}
    for i, id in ipairs(slice) do
      local body = bodies[i]
      if body then
        -- A watch ends in `"attempt":n}` or `"attempt":n,"reaps":k}` (putWatch, ackMessages);
        -- any other message ends in `"recoverAt":ms}`. Never decoded: cjson refuses some inputs
        -- JSON.parse accepts (lone surrogates), and one such job must not stop every tick.
        local at = recoverAt
        local head, attempt, reaps = string.match(body, '^(.*),"attempt":(%d+)}$')
        if not head then
          head, attempt, reaps = string.match(body, '^(.*),"attempt":(%d+),"reaps":(%d+)}$')
        end
        if head then
          at = watchAt
          body = head .. ',"attempt":' .. attempt .. ',"reaps":' .. ((tonumber(reaps) or 0) + 1) .. '}'
          counted[#counted + 1] = id
          counted[#counted + 1] = body
        end
        recover[#recover + 1] = '[' .. body .. ',' .. at .. ']'
        pushed[#pushed + 1] = at
        pushed[#pushed + 1] = id
      else
        stale[#stale + 1] = id
      end
    end
    if #pushed > 0 then
      redis.call('ZADD', outbox, unpack(pushed))
    end
    if #stale > 0 then
      redis.call('ZREM', outbox, unpack(stale))
    end
    if #counted > 0 then
      redis.call('HSET', messages, unpack(counted))
    end
  end
end

if continued then
  releaseDependents({ root = root, outbox = outbox, messages = messages, pending = KEYS[7],
    expiring = root .. ':expiring', metrics = KEYS[8], events = KEYS[9],
    maxLen = tonumber(ARGV[6]), retention = ARGV[11], now = now }, nil, false)
end

local m = newMetrics()
mAdd(m, 't:ticks', 1)
mAdd(m, 't:recovered', #recover)
metricsFlush(metrics, m, known)

out[#out + 1] = '"more":' .. jsonBool(more)
return '{"kind":"leader","now":' .. int(now) .. ',"token":' .. token .. ',"degradation":"' .. level
  .. '",' .. table.concat(out, ',') .. ',"due":[' .. table.concat(dueItems, ',') .. '],"recover":['
  .. table.concat(recover, ',') .. ']}'
