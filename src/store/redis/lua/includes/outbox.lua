--[[
  Include "outbox" (needs "members"): the outbox is a zset (message id -> recoverAt, the
  authoritative recover time) plus a hash (message id -> OutboxMessage JSON).

  putMessage(outbox, messages, id, recoverAt, json)
  removeMessages(outbox, messages, ids)
  ackMessages(outbox, messages, pairs)
    `pairs` alternates message id and dedupId: compare-and-delete, removing a message only if it
    still carries that dedupId (a late ack must not remove a newer message of the same job).
    Returns the count removed.
]]
--@include "members"

local function putMessage(outbox, messages, id, recoverAt, json)
  redis.call('ZADD', outbox, recoverAt, id)
  redis.call('HSET', messages, id, json)
end

local function ackMessages(outbox, messages, pairs)
  local ids = {}
  for i = 1, #pairs - 1, 2 do
    local body = redis.call('HGET', messages, pairs[i])
    if body and cjson.decode(body).dedupId == pairs[i + 1] then
      ids[#ids + 1] = pairs[i]
    end
  end
  if #ids == 0 then
    return 0
  end
  local removed = removeMembers('ZREM', outbox, ids)
  removeMembers('HDEL', messages, ids)
  return removed
end

local function removeMessages(outbox, messages, ids)
  if #ids == 0 then
    return
  end
  removeMembers('ZREM', outbox, ids)
  removeMembers('HDEL', messages, ids)
end
