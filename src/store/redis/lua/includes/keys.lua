--[[
  Include "keys": per-id keys, built from the hash-tag root (KEYS[1], `{prefix}`).
  Mirrors src/store/keys.ts exactly (scripts.test.ts checks every builder against it), so all
  keys stay in one Redis Cluster slot and keys.ts remains the one source of names.
]]
local function jobKey(root, id)
  return root .. ':j:' .. id
end

local function scheduleKey(root, id)
  return root .. ':s:' .. id
end

local function scheduleRunningKey(root, id)
  return root .. ':s:' .. id .. ':running'
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
