--[[
  nextDue: next chunk of a tick, fenced. Acknowledges published outbox messages (they become
  attempt-0 watches, see include "outbox", ackMessages), renews the tick lease and returns the
  due schedules.
  Input:
    KEYS[1] root
    KEYS[2] due index
    KEYS[3] outbox
    KEYS[4] outbox messages
    KEYS[5] tick lease
    ARGV[1] token
    ARGV[2] leaseMs
    ARGV[3] horizonMs
    ARGV[4] limit
    ARGV[5] reapAfterMs
    ARGV[6...] per published message: id, dedupId, not-before ms ('' = now)
  Output:
    LEASE_LOST (-1)   the token lost the lease; nothing was written
    JSON text         {"now":ms,"more":bool,"due":[ScheduleRecord...]}
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "errors"
--@include "lease"
--@include "members"
--@include "outbox"
--@include "schedule"
--@include "due"

if not holdsLease(KEYS[5], ARGV[1]) then
  return LEASE_LOST
end
local now = nowMs()
ackMessages(KEYS[1], KEYS[3], KEYS[4], argvFrom(6), now, tonumber(ARGV[5]))
redis.call('PEXPIRE', KEYS[5], ARGV[2])
local items, more = readDue(KEYS[1], KEYS[2], now + tonumber(ARGV[3]), tonumber(ARGV[4]))
return '{"now":' .. int(now) .. ',"more":' .. jsonBool(more) .. ',"due":[' .. table.concat(items, ',') .. ']}'
