--[[
  Include "due" (needs "keys", "schedule", "time"): read the due index.

  readDue(root, due, untilMs, limit)
    Active schedules with nextRunAt <= untilMs, earliest first, at most `limit`, as a list of
    ScheduleRecord JSON texts, plus `more` (true when more were due). Reads limit + 1 ids with
    ZRANGEBYSCORE ... LIMIT, never the whole set. Index entries whose schedule is gone or not
    active are dropped (they cannot occur through these scripts; this only heals).
]]
--@include "time"
--@include "keys"
--@include "schedule"

local function readDue(root, due, untilMs, limit)
  local ids = redis.call('ZRANGEBYSCORE', due, '-inf', int(untilMs), 'LIMIT', 0, limit + 1)
  local items, stale = {}, {}
  for i = 1, math.min(#ids, limit) do
    local s = readSchedule(scheduleKey(root, ids[i]))
    if s and s.status == 'active' and s.nextRunAt then
      items[#items + 1] = scheduleJson(s)
    else
      stale[#stale + 1] = ids[i]
    end
  end
  if #stale > 0 then
    redis.call('ZREM', due, unpack(stale))
  end
  return items, #ids > limit
end
