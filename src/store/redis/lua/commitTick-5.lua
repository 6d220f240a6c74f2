--[[
  commitTick: fenced commit of a chunk of planned schedules. For each commit whose schedule is
  still `active` at the planned rev: set nextRunAt and its due score (or complete it), add
  runsAdded, set lastRunAt, bump rev, and put its occurrence messages in the outbox.
  Input:
    KEYS[1] root
    KEYS[2] due index
    KEYS[3] outbox
    KEYS[4] outbox messages
    KEYS[5] tick lease
    ARGV[1] token
    ARGV[2] number of commits
    ARGV[3...] each commit: id, rev, nextRunAt ('' = completed), runsAdded,
               lastRunAt ('' = unchanged), message count, then per message:
               id, recoverAt, OutboxMessage JSON
  Output:
    LEASE_LOST (-1)   the token lost the lease; nothing was written
    {flag...}         one per commit, in order: 1 applied, 0 skipped (deleted, not active,
                      or its rev changed)
]]
--@include "keys"
--@include "errors"
--@include "lease"
--@include "members"
--@include "outbox"

local root, due, outbox, messages = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if not holdsLease(KEYS[5], ARGV[1]) then
  return LEASE_LOST
end

local flags = {}
local i = 3
for c = 1, tonumber(ARGV[2]) do
  local id, rev, nextRunAt = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local runsAdded, lastRunAt, count = ARGV[i + 3], ARGV[i + 4], tonumber(ARGV[i + 5])
  local first = i + 6
  i = first + 3 * count

  local key = scheduleKey(root, id)
  local stored = redis.call('HMGET', key, 'status', 'rev')
  if stored[1] ~= 'active' or tonumber(stored[2]) ~= tonumber(rev) then
    flags[c] = 0
  else
    if nextRunAt == '' then
      redis.call('HSET', key, 'status', 'completed')
      redis.call('HDEL', key, 'nextRunAt')
      redis.call('ZREM', due, id)
    else
      redis.call('HSET', key, 'nextRunAt', nextRunAt)
      redis.call('ZADD', due, nextRunAt, id)
    end
    if lastRunAt ~= '' then
      redis.call('HSET', key, 'lastRunAt', lastRunAt)
    end
    redis.call('HINCRBY', key, 'runs', runsAdded)
    redis.call('HINCRBY', key, 'rev', 1)
    for m = first, i - 1, 3 do
      putMessage(outbox, messages, ARGV[m], ARGV[m + 1], ARGV[m + 2])
    end
    flags[c] = 1
  end
end
return flags
