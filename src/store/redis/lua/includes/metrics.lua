--[[
  Include "metrics" (needs "time"): the metrics hash `{p}:metrics`, changed inside the scripts
  that change a job's status, so observability adds no round trip.

  Fields (every one starts at 0 and never goes below it):
    t:<total>      totals: submitted dispatched recovered started succeeded failed dead
                   cancelled skipped limited unplaced retried ticks
    g:queued, g:running, g:failed                      gauges
    s:in, s:out    jobs a Streams submit queued outside the backlog index (`{p}:pending`): due at
                   once, their delivery is on the stream, which is their queue. s:in counts them
                   as they are submitted, s:out as they leave `queued`; s:in - s:out are queued
                   now. The store reports s:in within t:submitted and s:in - s:out within
                   g:queued and the backlog (include "streams": dueBacklog;
                   src/store/redis/observability.ts,
                   docs/adr/0041-streams-submit-outside-the-backlog.md)
    s:claimed      deliveries Redis Streams workers took over from stopped consumers
                   (streamMaintain; read by streamStats)
    <h>:<i>, <h>:sum   histogram h (lag, dur, tick, acq): bucket i (0-based; i = #bounds is
                   +Inf; HISTOGRAM_BOUNDS mirrors HISTOGRAM_BOUNDS_MS, scripts.test.ts checks it),
                   and the sum of observations; the count is the sum of the buckets
    avg:lag, avg:fail  moving averages: avg = avg + 0.1 * (x - avg)

  A script gathers its changes in a batch and writes them with the fewest commands: at most two
  non-negative integer additions and nothing read → one HINCRBY each; otherwise one HMGET (of
  the fields not already read with metricsLoad) and one HSET. A field takes additions or
  average steps, never both. The batch is plain tables (a sum per added field, the steps per
  averaged one) and a function library makes each histogram field name once: Lua's allocations
  and number formatting, not the two commands, were most of a batch's cost.

  newMetrics()                 An empty batch.
  mAdd(b, field, n)            Add n (may be negative: clamped at 0).
  mObserve(b, h, x)            One histogram observation.
  mAverage(b, field, x)        One moving-average step.
  metricsLoad(key, fields)     HMGET fields now (e.g. averages as signals): a table field -> number,
                               to pass to metricsFlush so they are not read twice.
  metricsFlush(key, b, known)  Write the batch.
  leaveQueued(b, removed, job) A queued job leaves `queued`: g:queued down if it was in the
                               backlog index (`removed`: what its ZREM answered), else s:out up
                               if a Streams submit counted it in s:in (its hash has `onStream`).
]]
--@include "time"

local HISTOGRAM_BOUNDS = { 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000,
  300000 }
local BOUNDS = #HISTOGRAM_BOUNDS
-- Histogram field names (`<h>:<i>`, `<h>:sum`), each made when first used. A function library
-- keeps them across calls; a script run by EVAL starts empty and makes only those it uses.
local histogramFields = {}

local function newMetrics()
  return { fields = {}, adds = {}, avgs = {} }
end

local function mAdd(b, field, n)
  if n == 0 then
    return
  end
  local adds = b.adds
  local sum = adds[field]
  if sum then
    adds[field] = sum + n
    return
  end
  adds[field] = n
  if not b.avgs[field] then
    b.fields[#b.fields + 1] = field
  end
end

local function mAverage(b, field, x)
  local steps = b.avgs[field]
  if steps then
    steps[#steps + 1] = x
    return
  end
  b.avgs[field] = { x }
  if not b.adds[field] then
    b.fields[#b.fields + 1] = field
  end
end

-- mAdd's steps written out for the bucket and the sum: a function call costs about as much as
-- the rest of an observation, and every delivery makes two.
local function mObserve(b, h, x)
  local i = BOUNDS
  for j = 1, BOUNDS do
    if x <= HISTOGRAM_BOUNDS[j] then
      i = j - 1
      break
    end
  end
  local names = histogramFields[h]
  if not names then
    names = {}
    histogramFields[h] = names
  end
  local bucket, sum = names[i], names.sum
  if not bucket then
    bucket = h .. ':' .. i
    names[i] = bucket
  end
  if not sum then
    sum = h .. ':sum'
    names.sum = sum
  end
  local adds, avgs, fields = b.adds, b.avgs, b.fields
  local n = adds[bucket]
  if n then
    adds[bucket] = n + 1
  else
    adds[bucket] = 1
    if not avgs[bucket] then
      fields[#fields + 1] = bucket
    end
  end
  if x ~= 0 then
    n = adds[sum]
    if n then
      adds[sum] = n + x
    else
      adds[sum] = x
      if not avgs[sum] then
        fields[#fields + 1] = sum
      end
    end
  end
end

local function metricsLoad(key, fields)
  local values = redis.call('HMGET', key, unpack(fields))
  local known = {}
  for i = 1, #fields do
    known[fields[i]] = tonumber(values[i]) or 0
  end
  return known
end

local function metricsFlush(key, b, known)
  local fields = b.fields
  local count = #fields
  if count == 0 then
    return
  end
  local adds, avgs = b.adds, b.avgs
  if not known and count <= 2 then
    local increments = true
    for i = 1, count do
      local n = adds[fields[i]]
      if not n or avgs[fields[i]] or n < 0 or n ~= math.floor(n) then
        increments = false
      end
    end
    if increments then
      for i = 1, count do
        redis.call('HINCRBY', key, fields[i], int(adds[fields[i]]))
      end
      return
    end
  end
  local read = fields
  if known then
    read = {}
    for i = 1, count do
      if known[fields[i]] == nil then
        read[#read + 1] = fields[i]
      end
    end
  else
    known = {}
  end
  if #read > 0 then
    local values = redis.call('HMGET', key, unpack(read))
    for i = 1, #read do
      known[read[i]] = tonumber(values[i]) or 0
    end
  end
  local args = {}
  for i = 1, count do
    local field = fields[i]
    local v = known[field] + (adds[field] or 0)
    local steps = avgs[field]
    if steps then
      for s = 1, #steps do
        v = v + 0.1 * (steps[s] - v)
      end
    end
    if v < 0 then
      v = 0
    end
    args[2 * i - 1] = field
    args[2 * i] = num(v)
  end
  redis.call('HSET', key, unpack(args))
end

local function leaveQueued(b, removed, job)
  if removed == 1 then
    mAdd(b, 'g:queued', -1)
  elseif job.onStream then
    mAdd(b, 's:out', 1)
  end
end
