--[[
  listJobs: a newest-first page of jobs (by createdAt), optionally filtered. Examines at most
  1000 index entries per call; entries of expired jobs are dropped from the index.
  Input:
    KEYS[1] root
    KEYS[2] jobs index
    ARGV[1] limit
    ARGV[2] cursor score ('' = first page)
    ARGV[3] cursor id ('' = first page)
    ARGV[4] status filter ('' = any)
    ARGV[5] handler filter ('' = any)
    ARGV[6] scheduleId filter ('' = any)
  Output: JSON text {"items":[JobRecord...],"cursor"?:[score,"id"]}
]]
--@include "keys"
--@include "job"
--@include "page"

local root = KEYS[1]
local status, handler, scheduleId = ARGV[4], ARGV[5], ARGV[6]
local filtered = status ~= '' or handler ~= '' or scheduleId ~= ''

local function render(id)
  local key = jobKey(root, id)
  if filtered then
    local f = redis.call('HMGET', key, 'status', 'handler', 'scheduleId')
    if not f[1] then
      return nil
    end
    if (status ~= '' and f[1] ~= status) or (handler ~= '' and f[2] ~= handler)
      or (scheduleId ~= '' and f[3] ~= scheduleId) then
      return false
    end
  end
  local job = readJob(key)
  return job and jobJson(job)
end

return page(KEYS[2], tonumber(ARGV[1]), ARGV[2], ARGV[3], render, 1000)
