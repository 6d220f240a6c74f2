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
    redis.call('XADD', stream, '*', 'j', spec, 'r', int(retried))
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
