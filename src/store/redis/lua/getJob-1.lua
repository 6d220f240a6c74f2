--[[
  getJob: read one job.
  Input:
    KEYS[1] root
    ARGV[1] id
  Output: JobRecord JSON text, or nil when missing
]]
--@include "keys"
--@include "job"

local job = readJob(jobKey(KEYS[1], ARGV[1]))
if not job then
  return false
end
return jobJson(job)
