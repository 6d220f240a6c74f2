--[[
  Include "degrade" (needs "time", "json", "events"): the degradation controller, state in the
  hash `{p}:degrade` (level, since, pendingLevel and pendingSince — '' when none — signals, the
  JSON of the last evaluation's signals, and at, when that evaluation ran).

  parsePolicy(text)   A DegradationPolicy from its argument text (see codec.ts policyArg): 18
                      space-separated numbers — queueDepth, lagMs, failureRate, cpu, memory
                      thresholds (normal degraded critical each), debounceMs, local cpu, local
                      memory; `-` = absent, `inf` = Infinity.
  evaluateDegradation(key, events, maxLen, policy, depth, lag, fail, now, running)
                      One evaluation (target level with hysteresis, then the debounce, as
                      port.ts DegradationPolicy says); writes the state (and the time `at`)
                      and a `degradation.changed` event when the level changed. Returns the level.
                      With nothing due (depth 0) and nothing running lag and fail are judged 0:
                      no job starts or finishes to move them, and a level they raised would hold
                      for ever.
  storedLevel(key, now, everyMs)
                      The stored level while the last evaluation is younger than everyMs, else
                      nil (evaluate then).
]]
--@include "time"
--@include "json"
--@include "events"

local function parsePolicy(text)
  local t = {}
  for token in string.gmatch(text, '%S+') do
    if token == '-' then
      t[#t + 1] = false
    elseif token == 'inf' then
      t[#t + 1] = math.huge
    elseif token == '-inf' then
      t[#t + 1] = -math.huge
    else
      t[#t + 1] = tonumber(token)
    end
  end
  local function thresholds(i)
    if t[i] == false then
      return false
    end
    return { normal = t[i], degraded = t[i + 1], critical = t[i + 2] }
  end
  return { queueDepth = thresholds(1), lagMs = thresholds(4), failureRate = thresholds(7),
    cpu = thresholds(10), memory = thresholds(13), debounceMs = t[16], localCpu = t[17],
    localMemory = t[18] }
end

local function targetLevel(current, signals)
  local anyCritical, anyDegraded, allBelowNormal, allBelowDegraded = false, false, true, true
  for _, p in ipairs(signals) do
    local v, th = p[1], p[2]
    if v >= th.critical then
      anyCritical = true
    end
    if v >= th.degraded then
      anyDegraded, allBelowDegraded = true, false
    end
    if v >= th.normal then
      allBelowNormal = false
    end
  end
  if anyCritical then
    return 'critical'
  end
  if current == 'normal' then
    return anyDegraded and 'degraded' or 'normal'
  end
  if allBelowNormal then
    return 'normal'
  end
  if current == 'critical' and allBelowDegraded then
    return 'degraded'
  end
  return current
end

local function evaluateDegradation(key, events, maxLen, policy, depth, lag, fail, now, running)
  if depth == 0 and running <= 0 then
    lag, fail = 0, 0
  end
  local st = redis.call('HMGET', key, 'level', 'since', 'pendingLevel', 'pendingSince', 'signals')
  local level, since = st[1] or 'normal', st[2] or '0'
  local pendingLevel, pendingSince = st[3] or '', st[4] or ''

  local checks = { { depth, policy.queueDepth }, { lag, policy.lagMs },
    { fail, policy.failureRate } }
  local signals = '{"queueDepth":' .. num(depth) .. ',"lagMs":' .. num(lag) .. ',"failureRate":'
    .. num(fail)
  if policy.localCpu and policy.cpu then
    checks[#checks + 1] = { policy.localCpu, policy.cpu }
    signals = signals .. ',"cpu":' .. num(policy.localCpu)
  end
  if policy.localMemory and policy.memory then
    checks[#checks + 1] = { policy.localMemory, policy.memory }
    signals = signals .. ',"memory":' .. num(policy.localMemory)
  end
  signals = signals .. '}'

  local target = targetLevel(level, checks)
  local newLevel, newSince, newPending, newPendingSince = level, since, '', ''
  if target ~= level then
    newPending, newPendingSince = target, pendingSince
    if pendingLevel ~= target then
      newPendingSince = int(now)
    end
    if now - tonumber(newPendingSince) >= policy.debounceMs then
      emitEvent(events, maxLen, '{"type":"degradation.changed","at":' .. int(now) .. ',"from":"'
        .. level .. '","to":"' .. target .. '"}')
      newLevel, newSince, newPending, newPendingSince = target, int(now), '', ''
    end
  end
  redis.call('HSET', key, 'level', newLevel, 'since', newSince, 'pendingLevel', newPending,
    'pendingSince', newPendingSince, 'signals', signals, 'at', int(now))
  return newLevel
end

local function storedLevel(key, now, everyMs)
  if everyMs <= 0 then
    return nil
  end
  local st = redis.call('HMGET', key, 'level', 'at')
  -- The same `at` text until the next evaluation: numberOf converts it once.
  if st[2] and now - numberOf(st[2]) < everyMs then
    return st[1] or 'normal'
  end
  return nil
end
