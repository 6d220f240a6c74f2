--[[
  putSchedule: write a schedule record computed in TS. Without expectRev: create, or replace
  keeping the stored runs, lastRunAt and createdAt. With expectRev: write as given, only if the
  stored rev equals it. The stored rev becomes previous + 1; on create it is drawn from the
  rev sequence (INCR), which deleteSchedule raises to a deleted schedule's rev, so a re-created
  schedule never repeats a rev its id had. The due index holds
  the schedule iff it is `active` with a nextRunAt (score nextRunAt: a write ends a hold).
  With a quota (judged after expectRev): denied → nothing written, nothing counted; else
  counted with the write.
  Input:
    KEYS[1] root
    KEYS[2] due index
    KEYS[3] schedules index (zset: schedule id -> createdAt)
    KEYS[4] schedule rev sequence
    ARGV[1] id
    ARGV[2] ScheduleDef JSON
    ARGV[3] status
    ARGV[4] nextRunAt ('' = null)
    ARGV[5] lastRunAt ('' = none)
    ARGV[6] runs
    ARGV[7] createdAt
    ARGV[8] updatedAt
    ARGV[9] handler
    ARGV[10] expectRev ('' = none; '0' = the schedule must not exist: a create)
    ARGV[11] quota key ('' = none)
    ARGV[12] quota windows (`windowMs limit ...`)
    ARGV[13] 'skip' when its overlap policy is `skip`, else ''
  A schedule written under another tenant than the stored one's leaves that tenant's listing
  (include "schedule": scheduleTenant).
  A schedule written with overlap `skip` whose overlap lease no run holds: a run of it still
  running (begun under another policy before a PATCH to `skip`) takes the lease, and hands it on
  to the next such run when it ends (include "job": leaseToRunning), so occurrences are skipped
  while any runs, as the policy says.
  Output: JSON text
    {"created":bool,"schedule":ScheduleRecord,"quota"?:QuotaState}   written
    {"conflict":ScheduleRecord|null}             expectRev did not match
    {"denied":Denied}                            the quota refused it
]]
--@include "time"
--@include "keys"
--@include "json"
--@include "schedule"
--@include "quota"
--@include "job"

local root, due, schedules, id = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local key = scheduleKey(root, id)
local stored = readSchedule(key)
local expectRev = ARGV[10]

if expectRev ~= '' and (stored and tonumber(stored.rev) or 0) ~= tonumber(expectRev) then
  return '{"conflict":' .. (stored and scheduleJson(stored) or 'null') .. '}'
end

local quota = ''
if ARGV[11] ~= '' then
  local admitted, state = checkQuota(quotaKey(root, ARGV[11]), parseWindows(ARGV[12]), nowMs())
  if not admitted then
    return '{"denied":{"kind":"quota","quota":' .. state .. '}}'
  end
  quota = ',"quota":' .. state
end

local s = { def = ARGV[2], status = ARGV[3], runs = ARGV[6], createdAt = ARGV[7],
  updatedAt = ARGV[8], handler = ARGV[9] }
if ARGV[4] ~= '' then
  s.nextRunAt = ARGV[4]
end
if ARGV[5] ~= '' then
  s.lastRunAt = ARGV[5]
end
if not stored then
  s.rev = tostring(redis.call('INCR', KEYS[4]))
else
  s.rev = tostring(tonumber(stored.rev) + 1)
  if expectRev == '' then
    s.runs, s.lastRunAt, s.createdAt = stored.runs, stored.lastRunAt, stored.createdAt
  end
end

local fields = {}
local absent = {}
for _, name in ipairs(SCHEDULE_FIELDS) do
  if s[name] then
    fields[#fields + 1] = name
    fields[#fields + 1] = s[name]
  else
    absent[#absent + 1] = name
  end
end
redis.call('HSET', key, unpack(fields))
if #absent > 0 then
  redis.call('HDEL', key, unpack(absent))
end
redis.call('ZADD', schedules, s.createdAt, id)
-- Written under another tenant: it leaves the listing of the one it had.
if stored then
  local was = schedulesKey(root, scheduleTenant(stored.def, id))
  if was ~= schedules then
    redis.call('ZREM', was, id)
  end
end
if s.status == 'active' and s.nextRunAt then
  redis.call('ZADD', due, s.nextRunAt, id)
else
  redis.call('ZREM', due, id)
end
if ARGV[13] == 'skip' and stored and redis.call('EXISTS', scheduleRunningKey(root, id)) == 0 then
  leaseToRunning(root, id, nil, nowMs())
end
return '{"created":' .. jsonBool(not stored) .. ',"schedule":' .. scheduleJson(s) .. quota .. '}'
