--[[
  getSchedule: read one schedule.
  Input:
    KEYS[1] root
    ARGV[1] id
  Output: ScheduleRecord JSON text, or nil when missing
]]
--@include "keys"
--@include "schedule"

local s = readSchedule(scheduleKey(KEYS[1], ARGV[1]))
if not s then
  return false
end
return scheduleJson(s)
