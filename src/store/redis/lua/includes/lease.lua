--[[
  Include "lease": fencing-token checks.

  holdsLease(key, token)  True if the lease key exists and holds `token` (decimal text).
]]
local function holdsLease(key, token)
  return redis.call('GET', key) == token
end
