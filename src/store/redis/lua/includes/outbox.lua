--[[
  Include "outbox": the outbox is a zset (message id -> recoverAt, the
  authoritative recover time) plus a hash (message id -> OutboxMessage JSON).

  putMessage(outbox, messages, id, recoverAt, json)
  removeMessages(outbox, messages, ids)
  putWatch(outbox, messages, id, job, recoverAt)
    The message standing watch over a started attempt of `job`: dedupId `<id>~a<attempts>`,
    `attempt`, notBefore = the job's runAt. Re-published by the tick at recoverAt unless the
    attempt finished (or a later one began) before.
  deferWatch(outbox, id, recoverAt)
    Move an existing message's recoverAt (ZADD XX: never creates one without a body).
  ackMessages(outbox, messages, pairs, watchAt)
    `pairs` alternates message id and dedupId of messages the queue accepted. Compare-and-set: a
    message that still carries that dedupId (a late ack must not touch a newer message of the
    same job) becomes the job's attempt-0 watch — dedupId `<id>~a0`, `attempt` 0, recoverAt
    watchAt — which the tick re-dispatches if no delivery ever begins the job (the queue gave up
    silently). Returns the count acknowledged.
]]
--@include "members"
--@include "json"
--@include "job"

local function putMessage(outbox, messages, id, recoverAt, json)
  redis.call('ZADD', outbox, recoverAt, id)
  redis.call('HSET', messages, id, json)
end

local function ackMessages(outbox, messages, pairs, watchAt)
  local bodies, scores, n = {}, {}, 0
  for from = 1, #pairs - 1, 1000 do
    local ids, m = {}, 0
    for i = from, math.min(from + 998, #pairs - 1), 2 do
      m = m + 1
      ids[m] = pairs[i]
    end
    local found = redis.call('HMGET', messages, unpack(ids))
    for k = 1, m do
      local id, body = ids[k], found[k]
      -- Every writer puts id and dedupId first, as JSON.stringify writes them (ids are
      -- [A-Za-z0-9_.:@~-]: nothing to escape): '{"id":"<id>","dedupId":"<dedupId>",'.
      if body then
        local prefix = '{"id":"' .. id .. '","dedupId":"' .. pairs[from + 2 * k - 1] .. '",'
        if string.sub(body, 1, #prefix) == prefix then
          bodies[n + 1] = id
          bodies[n + 2] = '{"id":"' .. id .. '","dedupId":"' .. id .. '~a0",'
            .. string.sub(body, #prefix + 1, -2) .. ',"attempt":0}'
          scores[n + 1] = watchAt
          scores[n + 2] = id
          n = n + 2
        end
      end
    end
  end
  for i = 1, n, 1000 do
    redis.call('ZADD', outbox, 'XX', unpack(scores, i, math.min(i + 999, n)))
    redis.call('HSET', messages, unpack(bodies, i, math.min(i + 999, n)))
  end
  return n / 2
end

local function removeMessages(outbox, messages, ids)
  if #ids == 0 then
    return
  end
  removeMembers('ZREM', outbox, ids)
  removeMembers('HDEL', messages, ids)
end

local function putWatch(outbox, messages, id, job, recoverAt)
  putMessage(outbox, messages, id, recoverAt, '{"id":' .. jsonString(id) .. ',"dedupId":'
    .. jsonString(id .. '~a' .. job.attempts) .. ',"job":' .. specJson(job) .. ',"notBefore":'
    .. job.runAt .. ',"recoverAt":' .. recoverAt .. ',"attempt":' .. job.attempts .. '}')
end

local function deferWatch(outbox, id, recoverAt)
  redis.call('ZADD', outbox, 'XX', recoverAt, id)
end
