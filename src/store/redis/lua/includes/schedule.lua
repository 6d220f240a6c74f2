--[[
  Include "schedule" (needs "json"): the schedule hash and its JSON.

  Schedule hash `<root>:s:<id>` fields:
    def        ScheduleDef JSON (JSON.stringify'd in TS)
    status     ScheduleStatus      nextRunAt   ms, absent when null
    lastRunAt  ms, optional        runs, rev, createdAt, updatedAt
    handler    copy of def.handler, for the listing filter

  readSchedule(key)   Lua table of the present fields, or nil when missing.
  scheduleJson(s)     The ScheduleRecord JSON.
  scheduleTenant(def, id)
                      The tenant of the stored schedule `id` whose definition is `def`: the
                      definition names it. cjson refuses some text JSON.parse takes (an escaped
                      lone surrogate in the input): then the store id names it (`<tenant>:<id>`,
                      a bare id for the default tenant).
]]
--@include "json"

local SCHEDULE_FIELDS = { 'def', 'status', 'nextRunAt', 'lastRunAt', 'runs', 'rev',
  'createdAt', 'updatedAt', 'handler' }

local function readSchedule(key)
  local values = redis.call('HMGET', key, unpack(SCHEDULE_FIELDS))
  if not values[1] then
    return nil
  end
  local s = {}
  for i, name in ipairs(SCHEDULE_FIELDS) do
    if values[i] then
      s[name] = values[i]
    end
  end
  return s
end

local function scheduleJson(s)
  local m = { '"status":"' .. s.status .. '"', '"nextRunAt":' .. (s.nextRunAt or 'null') }
  if s.lastRunAt then
    m[#m + 1] = '"lastRunAt":' .. s.lastRunAt
  end
  m[#m + 1] = '"runs":' .. s.runs
  m[#m + 1] = '"rev":' .. s.rev
  m[#m + 1] = '"createdAt":' .. s.createdAt
  m[#m + 1] = '"updatedAt":' .. s.updatedAt
  return jsonExtend(s.def, table.concat(m, ','))
end

local function scheduleTenant(def, id)
  local ok, decoded = pcall(cjson.decode, def)
  local tenant = ok and type(decoded) == 'table' and decoded.tenant
    or string.match(id, '^([^:]+):')
  return tenant or 'default'
end
