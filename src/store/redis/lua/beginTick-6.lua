--[[
  beginTick: first step of a tick. Reads the clock and peeks at the due index and the outbox;
  when nothing is due and nothing needs recovery it returns WITHOUT writing (inner calls: TIME,
  ZRANGE, ZRANGE, PTTL = 4). Otherwise takes the tick lease (or reports it busy) and returns
  the first chunk of due schedules plus the outbox messages to re-publish, whose recoverAt is
  pushed to now + recoverGraceMs.
  Input:
    KEYS[1] root (hash tag, `{prefix}`)
    KEYS[2] due index (zset: schedule id -> nextRunAt)
    KEYS[3] outbox (zset: message id -> recoverAt)
    KEYS[4] outbox messages (hash: message id -> OutboxMessage JSON)
    KEYS[5] tick lease
    KEYS[6] lease sequence
    ARGV[1] leaseMs
    ARGV[2] horizonMs
    ARGV[3] limit
    ARGV[4] recoverLimit
    ARGV[5] recoverGraceMs
  Output: JSON text
    {"kind":"idle"|"busy","now":ms,"leaseRemainingMs":ms}
    {"kind":"leader","now":ms,"token":n,"more":bool,"due":[ScheduleRecord...],
     "recover":[[OutboxMessage, recoverAt]...]}   (recoverAt overrides the one in the message)
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "schedule"
--@include "due"

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

local dueItems, more = {}, false
if hasDue then
  dueItems, more = readDue(root, due, horizonEnd, tonumber(ARGV[3]))
end

local recover = {}
local recoverLimit = tonumber(ARGV[4])
if hasRecover and recoverLimit > 0 then
  local ids = redis.call('ZRANGEBYSCORE', outbox, '-inf', int(now), 'LIMIT', 0, recoverLimit)
  local recoverAt = int(now + tonumber(ARGV[5]))
  for from = 1, #ids, 500 do
    local slice = { unpack(ids, from, math.min(from + 499, #ids)) }
    local bodies = redis.call('HMGET', messages, unpack(slice))
    local pushed, stale = {}, {}
    for i, id in ipairs(slice) do
      if bodies[i] then
        recover[#recover + 1] = '[' .. bodies[i] .. ',' .. recoverAt .. ']'
        pushed[#pushed + 1] = recoverAt
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
  end
end

return '{"kind":"leader","now":' .. int(now) .. ',"token":' .. token .. ',"more":' .. jsonBool(more)
  .. ',"due":[' .. table.concat(dueItems, ',') .. '],"recover":[' .. table.concat(recover, ',') .. ']}'
