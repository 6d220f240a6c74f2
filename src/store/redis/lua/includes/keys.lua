--[[
  Include "keys": per-id keys, built from the hash-tag root (KEYS[1], `{prefix}`).
  Mirrors src/store/redis/keys.ts exactly (scripts.test.ts checks every builder against it), so
  all keys stay in one Redis Cluster slot and keys.ts remains the one source of names.
]]
local function jobKey(root, id)
  return root .. ':j:' .. id
end

local function scheduleKey(root, id)
  return root .. ':s:' .. id
end

-- Not under ':s:': the default tenant's schedule ids are stored bare, so '<id>:running' there
-- was another tenant's schedule key (`acme` + ':running' = tenant acme's schedule `running`).
local function scheduleRunningKey(root, id)
  return root .. ':overlap:' .. id
end

local function runsKey(root, scheduleId)
  return root .. ':runs:' .. scheduleId
end

-- The tenant is length-prefixed (bytes), so a ':' in it cannot make two tenants' keys collide.
local function idempotencyKey(root, tenant, key)
  return root .. ':idem:' .. #tenant .. ':' .. tenant .. ':' .. key
end

-- The quota key is length-prefixed (bytes), as the idempotency key's tenant is.
local function quotaKey(root, key)
  return root .. ':quota:' .. #key .. ':' .. key
end

-- A concurrency limit's slots (job id -> run lease end); length-prefixed like the quota key.
local function limitKey(root, key)
  return root .. ':limit:' .. #key .. ':' .. key
end

-- A rate limit's window (`<id>:<attempt>` -> when that run began); length-prefixed likewise.
local function rateKey(root, key)
  return root .. ':rate:' .. #key .. ':' .. key
end

-- A delivery's token id, remembered until the token expires: a second use is a replay.
local function deliveryKey(root, tokenId)
  return root .. ':delivery:' .. tokenId
end

-- A job deleted from the dead-letter list: a late delivery of it must not bring it back.
local function goneKey(root, id)
  return root .. ':gone:' .. id
end

-- A tenant's listing indexes; the tenant is length-prefixed (bytes), as above.
local function jobsKey(root, tenant)
  return root .. ':jobs:' .. #tenant .. ':' .. tenant
end

local function dlqKey(root, tenant)
  return root .. ':dlq:' .. #tenant .. ':' .. tenant
end

local function schedulesKey(root, tenant)
  return root .. ':schedules:' .. #tenant .. ':' .. tenant
end

-- A webhook endpoint's last deliveries (list, newest first); length-prefixed like the quota key.
local function hookLogKey(root, endpoint)
  return root .. ':hook:' .. #endpoint .. ':' .. endpoint
end

-- Every webhook endpoint's counters (hash: `<outcome>:<endpoint>` -> count).
local function hookCountsKey(root)
  return root .. ':hooks'
end
