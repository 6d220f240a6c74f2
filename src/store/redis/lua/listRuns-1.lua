--[[
  listRuns: a newest-first page of the jobs a schedule fired (by fire time).
  Input:
    KEYS[1] root
    ARGV[1] scheduleId
    ARGV[2] limit
    ARGV[3] cursor score ('' = first page)
    ARGV[4] cursor id ('' = first page)
  Output: JSON text {"items":[JobRecord...],"cursor"?:[score,"id"]}
]]
--@include "keys"
--@include "job"
--@include "page"

local root = KEYS[1]

local function render(id)
  local job = readJob(jobKey(root, id))
  return job and jobJson(job)
end

return page(runsKey(root, ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4], render, 1000)
