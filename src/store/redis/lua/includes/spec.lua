--[[
  Include "spec" (needs "job"): a JobSpec passed in ARGV by beginRun and markDead, which create
  the job when it is missing (occurrences are created by their first delivery).

  ARGV[from .. from+8]: id, JobSpec JSON without createdAt and runAt, createdAt, runAt, handler,
  scheduleId ('' = none), overlap ('' = none), runs index score (fireAt, else runAt), tenant.

  jobFromArgv(root, jobs, from)  Returns id, key, job: the stored job, or the new one. A missing
                                 job without scheduleId is not created (a submitted job exists
                                 before it is published, so it expired): job is then nil.
]]
--@include "keys"
--@include "job"

local function jobFromArgv(root, jobs, from)
  local id = ARGV[from]
  local key = jobKey(root, id)
  local job = readJob(key)
  if not job then
    if ARGV[from + 5] == '' then
      return id, key, nil
    end
    job = { data = ARGV[from + 1], createdAt = ARGV[from + 2], runAt = ARGV[from + 3],
      handler = ARGV[from + 4], tenant = ARGV[from + 8] }
    if ARGV[from + 5] ~= '' then
      job.scheduleId = ARGV[from + 5]
    end
    if ARGV[from + 6] ~= '' then
      job.overlap = ARGV[from + 6]
    end
    createJob(root, jobs, id, job, ARGV[from + 7])
  end
  return id, key, job
end
