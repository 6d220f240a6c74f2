--[[
  commitTick: fenced commit of a chunk of planned schedules. For each commit whose schedule is
  still `active` at the planned rev: set nextRunAt and its due score (or complete it; a hold
  sets the due score to dueAt and keeps nextRunAt), add runsAdded, set lastRunAt, bump rev, and
  put its occurrence messages in the outbox. Each message of an applied commit also enters the
  pending backlog (score: the occurrence's runAt; g:queued counts the ones new there), counts in
  t:dispatched and writes a `job.dispatched` event. Due-index, outbox and backlog writes are
  batched.
  Input:
    KEYS[1] root
    KEYS[2] due index
    KEYS[3] outbox
    KEYS[4] outbox messages
    KEYS[5] tick lease
    KEYS[6] pending backlog
    KEYS[7] metrics
    KEYS[8] events
    ARGV[1] token
    ARGV[2] eventsMaxLen (0 = no events)
    ARGV[3] number of commits
    ARGV[4...] each commit: id, rev, nextRunAt ('' = completed), runsAdded,
               lastRunAt ('' = unchanged), dueAt ('' = no hold), event members (JSON text
               `"scheduleId":..,"handler":..,"tenant":..`), message count, then per message:
               id, recoverAt, the job's runAt, OutboxMessage JSON
  Output:
    LEASE_LOST (-1)   the token lost the lease; nothing was written
    {flag...}         one per commit, in order: 1 applied, 0 skipped (deleted, not active,
                      or its rev changed)
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "errors"
--@include "lease"
--@include "members"
--@include "metrics"
--@include "events"

local root, due, outbox, messages = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pending, metrics, events = KEYS[6], KEYS[7], KEYS[8]
if not holdsLease(KEYS[5], ARGV[1]) then
  return LEASE_LOST
end
local maxLen = tonumber(ARGV[2])

local flags = {}
local outboxArgs, messageArgs, pendingArgs, dispatched, dueArgs = {}, {}, {}, {}, {}
local i = 4
for c = 1, tonumber(ARGV[3]) do
  local id, rev, nextRunAt = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local runsAdded, lastRunAt, dueAt = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local eventMembers, count = ARGV[i + 6], tonumber(ARGV[i + 7])
  local first = i + 8
  i = first + 4 * count

  local key = scheduleKey(root, id)
  local stored = redis.call('HMGET', key, 'status', 'rev', 'runs')
  if stored[1] ~= 'active' or tonumber(stored[2]) ~= tonumber(rev) then
    flags[c] = 0
  else
    -- One HSET for every field (read above: runs and rev are plain sums here).
    local fields = { 'rev', int(tonumber(stored[2]) + 1),
      'runs', int((tonumber(stored[3]) or 0) + tonumber(runsAdded)) }
    if lastRunAt ~= '' then
      fields[#fields + 1] = 'lastRunAt'
      fields[#fields + 1] = lastRunAt
    end
    if nextRunAt == '' then
      fields[#fields + 1] = 'status'
      fields[#fields + 1] = 'completed'
      redis.call('HSET', key, unpack(fields))
      redis.call('HDEL', key, 'nextRunAt')
      redis.call('ZREM', due, id)
    else
      fields[#fields + 1] = 'nextRunAt'
      fields[#fields + 1] = nextRunAt
      redis.call('HSET', key, unpack(fields))
      dueArgs[#dueArgs + 1] = dueAt ~= '' and dueAt or nextRunAt
      dueArgs[#dueArgs + 1] = id
    end
    for m = first, i - 1, 4 do
      outboxArgs[#outboxArgs + 1] = ARGV[m + 1]
      outboxArgs[#outboxArgs + 1] = ARGV[m]
      messageArgs[#messageArgs + 1] = ARGV[m]
      messageArgs[#messageArgs + 1] = ARGV[m + 3]
      pendingArgs[#pendingArgs + 1] = ARGV[m + 2]
      pendingArgs[#pendingArgs + 1] = ARGV[m]
      dispatched[#dispatched + 1] = '"jobId":' .. jsonString(ARGV[m]) .. ',' .. eventMembers
    end
    flags[c] = 1
  end
end

for from = 1, #dueArgs, 1000 do
  redis.call('ZADD', due, unpack(dueArgs, from, math.min(from + 999, #dueArgs)))
end
if #dispatched > 0 then
  local queued = 0
  for from = 1, #outboxArgs, 1000 do
    local to = math.min(from + 999, #outboxArgs)
    redis.call('ZADD', outbox, unpack(outboxArgs, from, to))
    redis.call('HSET', messages, unpack(messageArgs, from, to))
    queued = queued + redis.call('ZADD', pending, unpack(pendingArgs, from, to))
  end
  local m = newMetrics()
  mAdd(m, 't:dispatched', #dispatched)
  mAdd(m, 'g:queued', queued)
  metricsFlush(metrics, m)
  if maxLen > 0 then
    local at = int(nowMs())
    for _, members in ipairs(dispatched) do
      emitEvent(events, maxLen, '{"type":"job.dispatched","at":' .. at .. ',' .. members .. '}')
    end
  end
end
return flags
