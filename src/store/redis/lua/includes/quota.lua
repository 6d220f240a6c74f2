--[[
  Include "quota" (needs "time", "keys"): sliding-window quotas (port.ts QuotaCheck), checked and
  counted inside the write they guard with two commands (GET, and SET when admitted).

  Counter key `{p}:quota:<len>:<key>`: a string holding every window's live buckets,
  `<windowMs>,<start>:<n>,<start>:<n>...;<windowMs>,...` (start = bucket start in ms), expiring
  after the longest window kept. Windows are identified by windowMs (two windows of one check
  with the same windowMs share one counter); windows stored but not in this check are kept as
  they are.

  parseWindows(text)        ARGV text `windowMs limit windowMs limit ...` → list of {w, limit}.
  checkQuota(key, windows, now)
                            Returns admitted (bool) and the QuotaState JSON. Admitted: counts
                            the write (SET ... PX). Denied: writes nothing.
]]
--@include "time"

local function parseWindows(text)
  local windows, t = {}, {}
  for token in string.gmatch(text, '%S+') do
    t[#t + 1] = tonumber(token)
  end
  for i = 1, #t - 1, 2 do
    windows[#windows + 1] = { w = t[i], limit = t[i + 1] }
  end
  return windows
end

local function quotaStateJson(s)
  return '{"limit":' .. num(s.limit) .. ',"remaining":' .. num(s.remaining) .. ',"windowMs":'
    .. num(s.w) .. ',"resetMs":' .. num(s.resetMs) .. '}'
end

local function checkQuota(key, windows, now)
  local stored, order = {}, {}
  local text = redis.call('GET', key)
  if text then
    for part in string.gmatch(text, '[^;]+') do
      local w = string.match(part, '^([^,]+)')
      local buckets = {}
      for start, n in string.gmatch(part, ',(%d+):(%d+)') do
        buckets[#buckets + 1] = { tonumber(start), tonumber(n) }
      end
      stored[w] = buckets
      order[#order + 1] = w
    end
  end

  local views = {}
  for _, win in ipairs(windows) do
    local wkey = num(win.w)
    local live, count = {}, 0
    for _, b in ipairs(stored[wkey] or {}) do
      if b[1] > now - win.w and b[2] > 0 then
        live[#live + 1] = b
        count = count + b[2]
      end
    end
    table.sort(live, function(a, b)
      return a[1] < b[1]
    end)
    views[#views + 1] = { w = win.w, limit = win.limit, wkey = wkey, live = live, count = count }
  end

  local denied
  for _, v in ipairs(views) do
    if v.count >= v.limit then
      local left, resetMs = v.count, v.w
      for _, b in ipairs(v.live) do
        left = left - b[2]
        if left < v.limit then
          resetMs = b[1] + v.w - now
          break
        end
      end
      if not denied or resetMs > denied.resetMs
        or (resetMs == denied.resetMs and v.w > denied.w) then
        denied = { limit = v.limit, remaining = 0, w = v.w, resetMs = resetMs }
      end
    end
  end
  if denied then
    return false, quotaStateJson(denied)
  end

  local best, counted = nil, {}
  for _, v in ipairs(views) do
    local bucketMs = math.max(1, math.floor(v.w / 60))
    local current = math.floor(now / bucketMs) * bucketMs
    local oldest = current
    if v.live[1] and v.live[1][1] < oldest then
      oldest = v.live[1][1]
    end
    if not counted[v.wkey] then
      local parts, added = { v.wkey }, false
      for _, b in ipairs(v.live) do
        local n = b[2]
        if b[1] == current then
          n, added = n + 1, true
        end
        parts[#parts + 1] = int(b[1]) .. ':' .. int(n)
      end
      if not added then
        parts[#parts + 1] = int(current) .. ':1'
      end
      counted[v.wkey] = table.concat(parts, ',')
      if not stored[v.wkey] then
        order[#order + 1] = v.wkey
      end
    end
    local s = { limit = v.limit, remaining = v.limit - v.count - 1, w = v.w,
      resetMs = oldest + v.w - now }
    if not best or s.remaining < best.remaining
      or (s.remaining == best.remaining and s.w < best.w) then
      best = s
    end
  end

  local parts, longest = {}, 1
  for _, wkey in ipairs(order) do
    local part = counted[wkey]
    if not part then
      local kept = {}
      for _, b in ipairs(stored[wkey]) do
        kept[#kept + 1] = int(b[1]) .. ':' .. int(b[2])
      end
      part = wkey .. (#kept > 0 and ',' or '') .. table.concat(kept, ',')
    end
    parts[#parts + 1] = part
    longest = math.max(longest, math.ceil(tonumber(wkey)))
  end
  redis.call('SET', key, table.concat(parts, ';'), 'PX', int(longest))
  return true, quotaStateJson(best)
end
