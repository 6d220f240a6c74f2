--[[
  jobsExist: which of the named jobs exist and are a tenant's, reading each job's status and
  tenant only (never its input or result): a flow's check of its children's `after`, before it
  writes anything.
  Input:
    KEYS[1] root
    ARGV[1] tenant (a job stored without a tenant is the default tenant's)
    ARGV[2..] job ids
  Output: a list, one per id in order: 1 when the job exists and is the tenant's, else 0
]]
--@include "keys"

local root, tenant, out = KEYS[1], ARGV[1], {}
for i = 2, #ARGV do
  local f = redis.call('HMGET', jobKey(root, ARGV[i]), 'status', 'tenant')
  out[#out + 1] = (f[1] and (f[2] or 'default') == tenant) and 1 or 0
end
return out
