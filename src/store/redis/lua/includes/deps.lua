--[[
  Include "deps" (needs "keys", "json", "time", "outbox", "job", "metrics", "events", "streams"):
  job dependencies (ADR 0014).

  Keys and fields:
    <root>:deps:<id>   set: ids of the `waiting` jobs that wait for job <id>
    <root>:deps:todo   set: `1:<set>` / `0:<set>`, dependents a capped release left for later
                       (1 = their dependency succeeded, 0 = it failed), <set> naming the set
                       `<root>:deps:<set>` that holds them: `<id>#<n>`, the dependency's set as
                       it was then (renamed, so dependents added after the dependency is retried
                       from the dead-letter list are not released by this outcome)
    <root>:deps:seq    counter for those names
    outbox member `deps:todo` (never a job id): asks the next tick to go on (beginTick)
    job hash fields    dependents = 1 on a job some waiting job waits for (readJob reads it, so a
                       job without dependents costs no command here); on a waiting job: waits
                       (unfinished dependencies), onFailure ('run'; absent = cancel) and
                       dispatch ('streams' when it goes to the stream once released); held =
                       waiting on a job stored waiting, kept once it is released or cancelled
                       (a re-sent submit answers as stored: include "job", submittedBefore)

  releaseDependents(c, id, ok)
    Job <id> reached a final state (ok = succeeded). Each waiting dependent: success, or failure
    with onFailure 'run' -> one dependency fewer; at none it becomes `queued` with runAt =
    max(runAt, now) and is dispatched as a submit is (an outbox message due now, which the next
    tick publishes, or its delivery on the stream), entering the pending backlog. Failure with
    onFailure 'cancel' -> `cancelled` (retained, counted, `job.cancelled`), and its own dependents
    are released the same way (a cascade). At most DEPS_BUDGET dependents are changed per call; the
    rest is remembered in <root>:deps:todo and continued by the next release or, at the latest,
    the next tick (the outbox member DEPS_TODO, due now, makes it take the lease). `id` nil: only
    continue what is remembered (the tick).
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

-- The outbox member that asks the next tick to continue a capped release; no job id has this
-- shape, and it has no message.
local DEPS_TODO = 'deps:todo'

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
  local queue = {}
  if id then
    queue[1] = { id, ok }
  end
  local remembered = redis.call('SPOP', todo, 100)
  for _, entry in ipairs(remembered) do
    queue[#queue + 1] = { string.sub(entry, 3), string.sub(entry, 1, 1) == '1' }
  end
  local m = newMetrics()
  local budget, head, left = DEPS_BUDGET, 1, false
  while head <= #queue do
    local depId, depOk = queue[head][1], queue[head][2]
    head = head + 1
    local set = depsKey(c.root, depId)
    if budget > 0 then
      local members = redis.call('SPOP', set, budget)
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
    if redis.call('EXISTS', set) == 1 then
      -- Left for later, under a name of its own: the dependency's set as it is now.
      if not string.find(depId, '#', 1, true) then
        local kept = depId .. '#' .. redis.call('INCR', c.root .. ':deps:seq')
        redis.call('RENAME', set, depsKey(c.root, kept))
        depId = kept
      end
      redis.call('SADD', todo, (depOk and '1:' or '0:') .. depId)
      left = true
    end
  end
  -- More than this call took on (a capped release, or remembered ones it did not read): the next
  -- tick goes on, if no release comes first.
  if left or #remembered == 100 then
    redis.call('ZADD', c.outbox, 'NX', int(c.now), DEPS_TODO)
  end
  metricsFlush(c.metrics, m)
end

