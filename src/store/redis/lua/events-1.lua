--[[
  events: lifecycle events after an id, oldest first, filtered by type and job. Examines at most
  `budget` entries per call (XRANGE with an exclusive start, in chunks) and stops at `limit`
  matches; `last` is the id of the last entry examined (the last match when it stopped at the
  limit), absent when nothing followed `after`; `more` is true when it stopped before the end of
  the stream (at the limit or the budget) and an entry follows `last`.
  Input:
    KEYS[1] events (stream: field `e` = event JSON, `"type"` first)
    ARGV[1] after ('' = from the oldest)
    ARGV[2] limit
    ARGV[3] types, space-separated ('' = every type)
    ARGV[4] budget (entries examined at most)
    ARGV[5] job id ('' = every event); a job event's JSON starts
            `{"type":"…","at":<ms>,"jobId":<id as JSON>` (include "events", `jobEvent`)
    ARGV[6] '=' and the tenant ('' = every tenant): only the events it may see — its jobs' and schedules'
            events and the deployment's own (no job: leader, degradation); a job event without
            a tenant (an older version's) is the default tenant's. Others' events never match,
            and the answer never names one or says whether one follows: stopped at the limit,
            `last` is the last match and `more` is true without looking on; at the end of the
            stream, `last` is the latest of `after`, the last match and a position one second
            before the server's clock (past others' events, whether there were any; one second
            of room for a clock set back), and `examined` the last entry examined when it is
            later (for a reader on the server, which shows it to no one). Only a read that
            examined `budget` entries without reaching the end names where it stopped (the
            reader must get past them).
  Output: JSON text {"events":[["id",{event}]...],"last"?:"id","more"?:true,"examined"?:"id"}
]]
--@include "time"
local after, limit, budget = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
local types
if ARGV[3] ~= '' then
  types = {}
  for t in string.gmatch(ARGV[3], '%S+') do
    types[t] = true
  end
end
-- The job's id as the events spell it (the same encoder as `jobEvent`'s jsonString).
local jobNeedle
if ARGV[5] ~= nil and ARGV[5] ~= '' then
  jobNeedle = ',"jobId":' .. cjson.encode(ARGV[5])
end
local tenant
if ARGV[6] ~= nil and ARGV[6] ~= '' then
  tenant = string.sub(ARGV[6], 2)
end
local filtered = types or jobNeedle or tenant

-- The event's tenant: every producer writes it among the first, simple members (numbers and
-- texts: type, at, jobId, handler, scheduleId, tenant), before any nested one (error, webhook),
-- so the walk stops at the first member that is neither. Answers the tenant ('default' for a
-- job's event without one, written by an older version), or nil for an event of no job or
-- schedule.
local function eventTenant(json)
  local pos, ofJob = 2, false
  while true do
    local key, at = string.match(json, '^"(%w+)":()', pos)
    if not key then
      break
    end
    if key == 'jobId' or key == 'scheduleId' then
      ofJob = true
    end
    local value, after
    if string.sub(json, at, at) == '"' then
      -- A text: up to its closing quote, past escaped characters.
      local i = at + 1
      while true do
        local q = string.find(json, '["\\]', i)
        if not q then
          return ofJob and 'default' or nil
        end
        if string.sub(json, q, q) == '"' then
          value, after = string.sub(json, at + 1, q - 1), q + 1
          if key == 'tenant' and i > at + 1 then
            -- Escapes: the text as written (writers escape `/` and controls differently).
            value = cjson.decode(string.sub(json, at, q))
          end
          break
        end
        i = q + 2
      end
    else
      value, after = string.match(json, '^(%-?%d+)()', at)
      if not value then
        break
      end
    end
    if key == 'tenant' then
      return value
    end
    if string.sub(json, after, after) ~= ',' then
      break
    end
    pos = after + 1
  end
  return ofJob and 'default' or nil
end

local function matches(json)
  if types and not types[string.match(json, '^{"type":"([^"]+)"')] then
    return false
  end
  if jobNeedle then
    local _, stop = string.find(json, '^{"type":"[^"]+","at":%-?%d+')
    if not (stop ~= nil and string.sub(json, stop + 1, stop + #jobNeedle) == jobNeedle) then
      return false
    end
  end
  if tenant then
    local of = eventTenant(json)
    return of == nil or of == tenant
  end
  return true
end

local start = after == '' and '-' or '(' .. after
local found, examined, last, ended, more = {}, 0, nil, false, false
while #found < limit and examined < budget do
  local want = budget - examined
  if not filtered then
    want = math.min(want, limit - #found)
  end
  want = math.min(want, 500)
  local entries = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', want)
  local stoppedAt = #entries
  for n, entry in ipairs(entries) do
    local id, fields = entry[1], entry[2]
    examined = examined + 1
    last = id
    local json
    for i = 1, #fields - 1, 2 do
      if fields[i] == 'e' then
        json = fields[i + 1]
      end
    end
    if json and matches(json) then
      found[#found + 1] = '["' .. id .. '",' .. json .. ']'
      if #found >= limit then
        stoppedAt = n
        break
      end
    end
  end
  if stoppedAt < #entries then
    -- Stopped at the limit inside the chunk: entries follow `last`.
    more = true
    break
  end
  if #entries < want then
    ended = true
    break
  end
  start = '(' .. last
end
local out = '{"events":[' .. table.concat(found, ',') .. ']'
if tenant and not ended and #found < limit and last then
  -- The budget ran out on the stream's last entry: that is its end too (as the memory store
  -- sees it), not a stop that must name where it was.
  ended = #redis.call('XRANGE', KEYS[1], '(' .. last, '+', 'COUNT', 1) == 0
end
if tenant then
  -- Never another tenant's event id, nor whether one follows (see above).
  if #found >= limit then
    return out .. ',"last":"' .. last .. '","more":true}'
  end
  if ended then
    local position = after
    local function later(id)
      if id == nil or id == '' then
        return
      end
      if position == '' then
        position = id
        return
      end
      local ams, aseq = string.match(position, '^(%d+)-(%d+)$')
      local bms, bseq = string.match(id, '^(%d+)-(%d+)$')
      ams, bms = tonumber(ams), tonumber(bms)
      if bms > ams or (bms == ams and tonumber(bseq) > tonumber(aseq)) then
        position = id
      end
    end
    if #found > 0 then
      later(string.match(found[#found], '^%["([^"]+)"'))
    end
    local clock = nowMs() - 1001
    if clock >= 0 then
      later(int(clock) .. '-9999999999999999')
    end
    if position ~= '' and position ~= after then
      out = out .. ',"last":"' .. position .. '"'
    end
    if last and last ~= position then
      out = out .. ',"examined":"' .. last .. '"'
    end
    return out .. '}'
  end
end
if last then
  out = out .. ',"last":"' .. last .. '"'
  if not more and not ended then
    more = #redis.call('XRANGE', KEYS[1], '(' .. last, '+', 'COUNT', 1) > 0
  end
  if more then
    out = out .. ',"more":true'
  end
end
return out .. '}'
