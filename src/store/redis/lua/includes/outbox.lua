--[[
  Include "outbox" (needs "members"): the outbox is a zset (message id -> recoverAt, the
  authoritative recover time) plus a hash (message id -> OutboxMessage JSON).

  putMessage(outbox, messages, id, recoverAt, json)
  removeMessages(outbox, messages, ids)
]]
--@include "members"

local function putMessage(outbox, messages, id, recoverAt, json)
  redis.call('ZADD', outbox, recoverAt, id)
  redis.call('HSET', messages, id, json)
end

local function removeMessages(outbox, messages, ids)
  if #ids == 0 then
    return
  end
  removeMembers('ZREM', outbox, ids)
  removeMembers('HDEL', messages, ids)
end
