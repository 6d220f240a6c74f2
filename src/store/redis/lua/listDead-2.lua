--[[
  listDead: a newest-first page of the dead-letter list (by time of death).
  Input:
    KEYS[1] root
    KEYS[2] dead-letter list
    ARGV[1] limit
    ARGV[2] cursor score ('' = first page)
    ARGV[3] cursor id ('' = first page)
  Output: JSON text {"items":[JobRecord...],"cursor"?:[score,"id"]}
]]
--@include "keys"
--@include "job"
--@include "page"

local root = KEYS[1]

local function render(id)
  local job = readJob(jobKey(root, id))
  -- Not dead (made again since by a late delivery, its entry stale): left out, the entry removed.
  return job and job.status == 'dead' and jobJson(job) or nil
end

return page(KEYS[2], tonumber(ARGV[1]), ARGV[2], ARGV[3], render, 1000)
