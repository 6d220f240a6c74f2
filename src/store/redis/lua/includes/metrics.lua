--[[
  Include "metrics" (needs "time"): the metrics hash `{p}:metrics`, changed inside the scripts
  that change a job's status, so observability adds no round trip.

  Fields (every one starts at 0 and never goes below it):
    t:<total>      totals: submitted dispatched recovered started succeeded failed dead
                   cancelled skipped limited unplaced retried ticks
    g:queued, g:running, g:failed                      gauges
    <h>:<i>, <h>:sum   histogram h (lag, dur, tick, acq): bucket i (0-based; i = #bounds is
                   +Inf; HISTOGRAM_BOUNDS mirrors HISTOGRAM_BOUNDS_MS, scripts.test.ts checks it),
                   and the sum of observations; the count is the sum of the buckets
    avg:lag, avg:fail  moving averages: avg = avg + 0.1 * (x - avg)

  A script gathers its changes in a batch and writes them with the fewest commands: at most two
  non-negative integer additions and nothing read → one HINCRBY each; otherwise one HMGET (of
  the fields not already read with metricsLoad) and one HSET.

  newMetrics()                 An empty batch.
  mAdd(b, field, n)            Add n (may be negative: clamped at 0).
  mObserve(b, h, x)            One histogram observation.
  mAverage(b, field, x)        One moving-average step.
  metricsLoad(key, fields)     HMGET fields now (e.g. averages as signals): a table field -> number,
                               to pass to metricsFlush so they are not read twice.
  metricsFlush(key, b, known)  Write the batch.
]]
--@include "time"

local HISTOGRAM_BOUNDS = { 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000,
  300000 }

local function newMetrics()
  return { order = {}, ops = {} }
end

local function mOp(b, field, op)
  local ops = b.ops[field]
  if not ops then
    ops = {}
    b.ops[field] = ops
    b.order[#b.order + 1] = field
  end
  ops[#ops + 1] = op
end

local function mAdd(b, field, n)
  if n ~= 0 then
    mOp(b, field, { 'add', n })
  end
end

local function mAverage(b, field, x)
  mOp(b, field, { 'avg', x })
end

local function mObserve(b, h, x)
  local i = #HISTOGRAM_BOUNDS
  for j, bound in ipairs(HISTOGRAM_BOUNDS) do
    if x <= bound then
      i = j - 1
      break
    end
  end
  mAdd(b, h .. ':' .. i, 1)
  mAdd(b, h .. ':sum', x)
end

local function metricsLoad(key, fields)
  local values = redis.call('HMGET', key, unpack(fields))
  local known = {}
  for i, field in ipairs(fields) do
    known[field] = tonumber(values[i]) or 0
  end
  return known
end

local function metricsFlush(key, b, known)
  if #b.order == 0 then
    return
  end
  if not known and #b.order <= 2 then
    local increments = true
    for _, field in ipairs(b.order) do
      for _, op in ipairs(b.ops[field]) do
        if op[1] ~= 'add' or op[2] < 0 or op[2] ~= math.floor(op[2]) then
          increments = false
        end
      end
    end
    if increments then
      for _, field in ipairs(b.order) do
        local n = 0
        for _, op in ipairs(b.ops[field]) do
          n = n + op[2]
        end
        redis.call('HINCRBY', key, field, int(n))
      end
      return
    end
  end
  known = known or {}
  local missing = {}
  for _, field in ipairs(b.order) do
    if known[field] == nil then
      missing[#missing + 1] = field
    end
  end
  if #missing > 0 then
    local values = redis.call('HMGET', key, unpack(missing))
    for i, field in ipairs(missing) do
      known[field] = tonumber(values[i]) or 0
    end
  end
  local args = {}
  for _, field in ipairs(b.order) do
    local v = known[field]
    for _, op in ipairs(b.ops[field]) do
      if op[1] == 'add' then
        v = v + op[2]
      else
        v = v + 0.1 * (op[2] - v)
      end
    end
    if v < 0 then
      v = 0
    end
    args[#args + 1] = field
    args[#args + 1] = num(v)
  end
  redis.call('HSET', key, unpack(args))
end
