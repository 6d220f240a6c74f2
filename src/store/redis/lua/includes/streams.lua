--[[
  Include "streams" (needs "keys", "time"): the Redis Streams queue of the streams transport
  (docs/streams.md). Keys, all under the hash-tag root:
    <root>:q          the stream; an entry is a delivery (`j` the JobSpec JSON, `r` how many
                      retries it has had) or a wake-up (`w` the not-before time that changed)
    <root>:q:delayed  zset: member (job id) -> not-before ms, for deliveries not due yet
    <root>:q:bodies   hash: member -> `<retries> <JobSpec JSON>` of each delayed delivery
  Consumer group: `tickwork`, created by the workers (XGROUP CREATE … MKSTREAM).

  streamDispatch(root, member, spec, retried, notBefore, now)
    Due (notBefore <= now): XADD the delivery. Else park it in the delayed set (one per member:
    a later dispatch of the same job replaces the earlier), and when it is now the earliest
    delayed delivery, XADD a wake-up so a worker blocked on the stream re-reads its deadline.

  queuedOnStream(root, metrics, known)
    How many jobs are queued outside the backlog index (include "metrics": s:in - s:out, from
    `known`, loaded with both). Each such job has its delivery on the stream or in the delayed
    set until it leaves `queued`; so while some are counted and both are empty, none is queued
    any more: a begin that did not count s:out (an older version's, during an upgrade) is
    settled by setting s:out to s:in.

  dueBacklog(root, pending, metrics, known, now)
    The due backlog (`StoreStats.backlog`, the degradation controller's queue depth): the
    backlog index's members due by now, and the jobs queued outside it (queuedOnStream).

  forgetConsumers(stream, self, minIdle)
    Deletes from the group every consumer but `self` that holds no pending delivery and has not
    read for minIdle ms or more: what a process killed without leaving the group leaves behind.
    Deleting one holds no risk: it holds nothing, and a live one (idle in a long blocking read)
    is made again by its next read. Does nothing without a stream or group.

  requeueSkipped(stream, minPending, max)
    Puts back on the stream (XADD as a new entry, XDEL of the old one) up to `max` entries the
    group will never deliver: at or before its last-delivered id and not pending. No script of
    ours leaves one (an entry leaves the pending list only with its XDEL, in the same script), but
    a group created or moved (XGROUP CREATE|SETID … $) after entries were added, or made again
    after XGROUP DESTROY (the pending list goes with it), a read with NOACK or an XACK without
    XDEL by someone else does. Looks only before the oldest pending entry (`minPending`, the
    summary's; nil when none is pending), so it reads one entry while the head of the stream is
    pending or unread; a skipped entry behind a pending one is put back once that one has gone.
    Answers how many it put back.
]]
--@include "keys"
--@include "time"

local STREAM_GROUP = 'tickwork'

local function streamKey(root)
  return root .. ':q'
end

local function streamDispatch(root, member, spec, retried, notBefore, now)
  local stream = streamKey(root)
  if notBefore <= now then
    redis.call('XADD', stream, '*', 'j', spec, 'r', retried == 0 and '0' or int(retried))
    return
  end
  local delayed = stream .. ':delayed'
  local first = redis.call('ZRANGE', delayed, 0, 0, 'WITHSCORES')
  redis.call('ZADD', delayed, notBefore, member)
  redis.call('HSET', stream .. ':bodies', member, retried .. ' ' .. spec)
  if first[2] == nil or notBefore < tonumber(first[2]) then
    redis.call('XADD', stream, '*', 'w', notBefore)
  end
end

local function queuedOnStream(root, metrics, known)
  local outside = known['s:in'] - known['s:out']
  if outside <= 0 then
    return 0
  end
  local stream = streamKey(root)
  if redis.call('XLEN', stream) == 0 and redis.call('ZCARD', stream .. ':delayed') == 0 then
    known['s:out'] = known['s:in']
    redis.call('HSET', metrics, 's:out', int(known['s:in']))
    return 0
  end
  return outside
end

local function dueBacklog(root, pending, metrics, known, now)
  return redis.call('ZCOUNT', pending, '-inf', int(now)) + queuedOnStream(root, metrics, known)
end

local function forgetConsumers(stream, self, minIdle)
  local ok, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', stream, STREAM_GROUP)
  if not ok then
    return
  end
  for i = 1, #consumers do
    local c = consumers[i]
    local name, pending, idle
    for j = 1, #c - 1, 2 do
      local field = c[j]
      if field == 'name' then
        name = c[j + 1]
      elseif field == 'pending' then
        pending = c[j + 1]
      elseif field == 'idle' then
        idle = c[j + 1]
      end
    end
    if name and name ~= self and pending == 0 and idle and idle >= minIdle then
      redis.call('XGROUP', 'DELCONSUMER', stream, STREAM_GROUP, name)
    end
  end
end

-- Whether stream entry id `a` comes before `b` (ids compared as the two numbers they hold).
local function streamIdBefore(a, b)
  local ams, aseq = string.match(a, '^(%d+)-(%d+)$')
  local bms, bseq = string.match(b, '^(%d+)-(%d+)$')
  if #ams ~= #bms then
    return #ams < #bms
  end
  if ams ~= bms then
    return ams < bms
  end
  if #aseq ~= #bseq then
    return #aseq < #bseq
  end
  return aseq < bseq
end

local function requeueSkipped(stream, minPending, max)
  local head = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
  if not head or (minPending and not streamIdBefore(head[1], minPending)) then
    return 0
  end
  local last
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    local name, delivered
    for i = 1, #g - 1, 2 do
      if g[i] == 'name' then
        name = g[i + 1]
      elseif g[i] == 'last-delivered-id' then
        delivered = g[i + 1]
      end
    end
    if name == STREAM_GROUP then
      last = delivered
    end
  end
  -- The head not yet delivered: nothing before it was skipped.
  if not last or streamIdBefore(last, head[1]) then
    return 0
  end
  -- Up to the oldest entry a consumer holds, never including it (it may be the last delivered).
  local upto = last
  if minPending and not streamIdBefore(last, minPending) then
    upto = '(' .. minPending
  end
  local skipped = redis.call('XRANGE', stream, '-', upto, 'COUNT', max)
  for _, entry in ipairs(skipped) do
    -- The fields a delivery or a wake-up has (an entry with thousands of fields would not
    -- unpack); one with none of them keeps its first, and the worker that reads it says so.
    local fields, kept = entry[2] or {}, {}
    for i = 1, #fields - 1, 2 do
      local name = fields[i]
      if name == 'j' or name == 'r' or name == 'w' then
        kept[#kept + 1] = name
        kept[#kept + 1] = fields[i + 1]
      end
    end
    if #kept == 0 and #fields >= 2 then
      kept = { fields[1], fields[2] }
    end
    if #kept > 0 then
      redis.call('XADD', stream, '*', unpack(kept))
    end
    redis.call('XDEL', stream, entry[1])
  end
  return #skipped
end
