--[[
  getJob: read one job.
  Input:
    KEYS[1] root
    ARGV[1] id
    ARGV[2] tenant (optional): a job of another tenant answers nil as a missing one does, after
            reading its tenant only (one HGET), so the answer takes no longer for a large job
            than for none; a job stored without a tenant is the default tenant's
  Output: JobRecord JSON text, or nil when missing (or another tenant's)
]]
--@include "keys"
--@include "job"

local key = jobKey(KEYS[1], ARGV[1])
if ARGV[2] and (redis.call('HGET', key, 'tenant') or 'default') ~= ARGV[2] then
  return false
end
local job = readJob(key)
if not job then
  return false
end
return jobJson(job)
