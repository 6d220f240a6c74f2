--[[
  Include "outbox" (needs "keys"): the outbox is a zset (message id -> recoverAt, the
  authoritative recover time) plus a hash (message id -> OutboxMessage JSON).

  A job's first message — its id, dedupId = its id, the job's spec, notBefore = its runAt — is
  what a submit, a batch submit and a released dependent put in the outbox, and all of it is in
  the job's hash already. Those writers store the zset entry alone (putJobMessage), and the
  readers derive the body from the job when the hash has none (jobMessage). Every other writer
  stores a body; an entry and its body are removed together. So an entry without a body is its
  job's first message, not yet acknowledged (docs/adr/0029-a-job-first-message-has-no-body.md).

  putMessage(outbox, messages, id, recoverAt, json)
  putJobMessage(outbox, id, recoverAt)
    The job's first message: the zset entry, no body.
  jobMessage(root, id, dedupId, rest)
    The body of job `id`'s first message under `dedupId`, `rest` (`"recoverAt":…` and what
    follows) closing it; nil when the job is gone.
  messageBodies(root, messages, ids, recoverAt)
    The bodies of `ids` (outbox members), as HMGET answers them: a job's first message derived
    with `recoverAt`, false for a member without a body whose job is gone.
  removeMessages(outbox, messages, ids)
    Removes the entries and their bodies (a body never outlives its entry: one id whose entry
    is not there costs one ZREM).
  putWatch(outbox, messages, id, job, recoverAt)
    The message standing watch over a started attempt of `job`: dedupId `<id>~a<attempts>`,
    `attempt`, notBefore = the job's runAt. Re-published by the tick at recoverAt unless the
    attempt finished (or a later one began) before.
  deferWatch(outbox, id, recoverAt)
    Move an existing message's recoverAt (ZADD XX: never creates one without a body).
  carries(outbox, id, dedupId, body)
    Whether entry `id`, whose body HMGET/HGET answered as `body`, is still the message published
    under `dedupId` (the compare of ackMessages and deferOutbox); with a body, also the length of
    its '{"id":…,"dedupId":…,' prefix.
  ackMessages(root, outbox, messages, acks, now, reapAfterMs)
    `acks` holds three values per message the queue accepted: its id, its dedupId and its
    not-before time ('' = now). Compare-and-set: a message that still carries that dedupId (a
    late ack must not touch a newer message of the same job) becomes the job's attempt-0 watch —
    dedupId `<id>~a0`, `attempt` 0, recoverAt reapAfterMs after the later of now and its
    not-before time — which the tick re-dispatches if no delivery ever begins the job (the queue
    gave up silently). A message published long before it is due (a released dependent with a
    late `runAt`, one a queue with a short longest delay took hours early) is not due to start
    before then, so its watch waits for it. Returns the count acknowledged.
]]
--@include "members"
--@include "json"
--@include "keys"
--@include "job"

local function putMessage(outbox, messages, id, recoverAt, json)
  redis.call('ZADD', outbox, recoverAt, id)
  redis.call('HSET', messages, id, json)
end

local function putJobMessage(outbox, id, recoverAt)
  redis.call('ZADD', outbox, recoverAt, id)
end

local function jobMessage(root, id, dedupId, rest)
  local f = redis.call('HMGET', jobKey(root, id), 'data', 'createdAt', 'runAt')
  if not f[1] then
    return nil
  end
  return '{"id":' .. jsonString(id) .. ',"dedupId":' .. jsonString(dedupId) .. ',"job":'
    .. specJson({ data = f[1], createdAt = f[2], runAt = f[3] }) .. ',"notBefore":' .. f[3] .. ','
    .. rest
end

local function messageBodies(root, messages, ids, recoverAt)
  local bodies = redis.call('HMGET', messages, unpack(ids))
  for i, id in ipairs(ids) do
    if not bodies[i] then
      bodies[i] = jobMessage(root, id, id, '"recoverAt":' .. recoverAt .. '}') or false
    end
  end
  return bodies
end

local function carries(outbox, id, dedupId, body)
  if body then
    -- Every writer puts id and dedupId first, as JSON.stringify writes them (ids are
    -- [A-Za-z0-9_.:@~-]: nothing to escape): '{"id":"<id>","dedupId":"<dedupId>",'.
    local prefix = '{"id":"' .. id .. '","dedupId":"' .. dedupId .. '",'
    return string.sub(body, 1, #prefix) == prefix, #prefix
  end
  -- No body: the job's first message, whose dedupId is its id, while its entry exists.
  return dedupId == id and redis.call('ZSCORE', outbox, id) ~= false
end

local function ackMessages(root, outbox, messages, acks, now, reapAfterMs)
  local bodies, scores, n = {}, {}, 0
  for from = 1, #acks - 2, 999 do
    local ids, m = {}, 0
    for i = from, math.min(from + 996, #acks - 2), 3 do
      m = m + 1
      ids[m] = acks[i]
    end
    local found = redis.call('HMGET', messages, unpack(ids))
    for k = 1, m do
      local at = from + 3 * (k - 1)
      local id, dedupId, body = ids[k], acks[at + 1], found[k]
      local current, head = carries(outbox, id, dedupId, body)
      local watch
      local watchAt = int(math.max(now, tonumber(acks[at + 2]) or now) + reapAfterMs)
      if current and body then
        watch = '{"id":"' .. id .. '","dedupId":"' .. id .. '~a0",'
          .. string.sub(body, head + 1, -2) .. ',"attempt":0}'
      elseif current then
        -- The job's first message, without a body: its watch gets one.
        watch = jobMessage(root, id, id .. '~a0', '"recoverAt":' .. watchAt .. ',"attempt":0}')
      end
      if watch then
        bodies[n + 1] = id
        bodies[n + 2] = watch
        scores[n + 1] = watchAt
        scores[n + 2] = id
        n = n + 2
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
  if #ids == 1 then
    -- A body is written only with its entry and removed with it: no entry, no body (one command
    -- fewer for a job that has no message, as a run on Redis Streams usually finds).
    if redis.call('ZREM', outbox, ids[1]) == 1 then
      redis.call('HDEL', messages, ids[1])
    end
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
