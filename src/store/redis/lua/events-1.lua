--[[
  events: lifecycle events after an id, oldest first, filtered by type. Examines at most
  `budget` entries per call (XRANGE with an exclusive start, in chunks) and stops at `limit`
  matches; `last` is the id of the last entry examined (the last match when it stopped at the
  limit), absent when nothing followed `after`.
  Input:
    KEYS[1] events (stream: field `e` = event JSON, `"type"` first)
    ARGV[1] after ('' = from the oldest)
    ARGV[2] limit
    ARGV[3] types, space-separated ('' = every type)
    ARGV[4] budget (entries examined at most)
  Output: JSON text {"events":[["id",{event}]...],"last"?:"id"}
]]
local after, limit, budget = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
local types
if ARGV[3] ~= '' then
  types = {}
  for t in string.gmatch(ARGV[3], '%S+') do
    types[t] = true
  end
end

local start = after == '' and '-' or '(' .. after
local found, examined, last = {}, 0, nil
while #found < limit and examined < budget do
  local want = budget - examined
  if not types then
    want = math.min(want, limit - #found)
  end
  want = math.min(want, 500)
  local entries = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', want)
  for _, entry in ipairs(entries) do
    local id, fields = entry[1], entry[2]
    examined = examined + 1
    last = id
    local json
    for i = 1, #fields - 1, 2 do
      if fields[i] == 'e' then
        json = fields[i + 1]
      end
    end
    if json and (not types or types[string.match(json, '^{"type":"([^"]+)"')]) then
      found[#found + 1] = '["' .. id .. '",' .. json .. ']'
      if #found >= limit then
        break
      end
    end
  end
  if #entries < want then
    break
  end
  start = '(' .. last
end
local out = '{"events":[' .. table.concat(found, ',') .. ']'
if last then
  out = out .. ',"last":"' .. last .. '"'
end
return out .. '}'
