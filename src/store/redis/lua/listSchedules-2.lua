--[[
  listSchedules: a newest-first page of schedules (by createdAt), optionally filtered. Examines
  at most 1000 index entries per call.
  Input:
    KEYS[1] root
    KEYS[2] schedules index
    ARGV[1] limit
    ARGV[2] cursor score ('' = first page)
    ARGV[3] cursor id ('' = first page)
    ARGV[4] status filter ('' = any)
    ARGV[5] handler filter ('' = any)
  Output: JSON text {"items":[ScheduleRecord...],"cursor"?:[score,"id"]}
]]
--@include "keys"
--@include "schedule"
--@include "page"

local root = KEYS[1]
local status, handler = ARGV[4], ARGV[5]

local function render(id)
  local s = readSchedule(scheduleKey(root, id))
  if not s then
    return nil
  end
  if (status ~= '' and s.status ~= status) or (handler ~= '' and s.handler ~= handler) then
    return false
  end
  return scheduleJson(s)
end

return page(KEYS[2], tonumber(ARGV[1]), ARGV[2], ARGV[3], render, 1000)
