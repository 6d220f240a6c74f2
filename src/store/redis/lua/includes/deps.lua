--[[
  Include "deps" (needs "keys", "json", "time", "outbox", "job", "metrics", "events", "streams"):
  job dependencies (ADR 0014).

  Keys and fields:
    <root>:deps:<id>   set: ids of the `waiting` jobs that wait for job <id>
    <root>:deps:todo   set: `1:<id>` / `0:<id>`, dependencies whose dependents a capped release
                       left for the next release (1 = it succeeded, 0 = it failed)
    job hash fields    dependents = 1 on a job some waiting job waits for (readJob reads it, so a
                       job without dependents costs no command here); on a waiting job: waits
                       (unfinished dependencies), onFailure ('run'; absent = cancel) and
                       dispatch ('streams' when it goes to the stream once released)

  releaseDependents(c, id, ok)
    Job <id> reached a final state (ok = succeeded). Each waiting dependent: success, or failure
    with onFailure 'run' -> one dependency fewer; at none it becomes `queued` with runAt =
    max(runAt, now) and is dispatched as a submit is (an outbox message due now, which the next
    tick publishes, or its delivery on the stream), entering the pending backlog. Failure with
    onFailure 'cancel' -> `cancelled` (retained, counted, `job.cancelled`), and its own dependents
    are released the same way (a cascade). At most DEPS_BUDGET dependents are changed per call; the
    rest is remembered in <root>:deps:todo and continued by the next release.
    `c`: { root, outbox, messages, pending, expiring, metrics, events, maxLen, retention, now }.
]]
--@include "keys"
--@include "json"
--@include "time"
--@include "outbox"
--@include "job"
--@include "metrics"
--@include "events"
--@include "streams"

local DEPS_BUDGET = 1000

local function depsKey(root, id)
  return root .. ':deps:' .. id
end

local function dispatchReleased(c, w, job, m)
  local runAt = math.max(tonumber(job.runAt), c.now)
  job.runAt, job.status = int(runAt), 'queued'
  local key = jobKey(c.root, w)
  redis.call('HSET', key, 'status', 'queued', 'runAt', job.runAt)
  redis.call('HDEL', key, 'waits', 'dispatch')
  if job.dispatch == 'streams' then
    streamDispatch(c.root, w, specJson(job), 0, runAt, c.now)
  else
    putJobMessage(c.outbox, w, int(c.now))
  end
  if redis.call('ZADD', c.pending, job.runAt, w) == 1 then
    mAdd(m, 'g:queued', 1)
  end
  mAdd(m, 'g:waiting', -1)
end

local function cancelWaiting(c, w, job, m)
  local key = jobKey(c.root, w)
  job.status, job.finishedAt = 'cancelled', int(c.now)
  redis.call('HSET', key, 'status', job.status, 'finishedAt', job.finishedAt)
  redis.call('HDEL', key, 'waits', 'dispatch')
  retainJob(c.root, c.expiring, w, job, c.now, c.retention)
  mAdd(m, 'g:waiting', -1)
  mAdd(m, 't:cancelled', 1)
  emitEvent(c.events, c.maxLen, jobEvent('job.cancelled', c.now, w, job))
end

local function releaseDependents(c, id, ok)
  local todo = c.root .. ':deps:todo'
  local queue = { { id, ok } }
  for _, entry in ipairs(redis.call('SPOP', todo, 100)) do
    queue[#queue + 1] = { string.sub(entry, 3), string.sub(entry, 1, 1) == '1' }
  end
  local m = newMetrics()
  local budget, head = DEPS_BUDGET, 1
  while head <= #queue do
    local depId, depOk = queue[head][1], queue[head][2]
    head = head + 1
    if budget <= 0 then
      redis.call('SADD', todo, (depOk and '1:' or '0:') .. depId)
    else
      local set = depsKey(c.root, depId)
      local members = redis.call('SPOP', set, budget)
      if redis.call('EXISTS', set) == 1 then
        redis.call('SADD', todo, (depOk and '1:' or '0:') .. depId)
      end
      for _, w in ipairs(members) do
        budget = budget - 1
        local job = readJob(jobKey(c.root, w))
        if job and job.status == 'waiting' then
          local f = redis.call('HMGET', jobKey(c.root, w), 'onFailure', 'dispatch')
          job.dispatch = f[2] or nil
          if depOk or f[1] == 'run' then
            if redis.call('HINCRBY', jobKey(c.root, w), 'waits', -1) <= 0 then
              dispatchReleased(c, w, job, m)
            end
          else
            cancelWaiting(c, w, job, m)
            if job.dependents then
              queue[#queue + 1] = { w, false }
            end
          end
        end
      end
    end
  end
  metricsFlush(c.metrics, m)
end
