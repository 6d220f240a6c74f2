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
