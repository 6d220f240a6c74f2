--[[
  listNodes: every node record with the store's clock; the caller judges each one live, stale or
  dropped by its lastSeen and ttlMs (dropped ones are left for the next heartbeat to remove). At
  most heartbeatNode's maxNodes records.
  Input:
    KEYS[1] root (the hash tag, e.g. `{tw}`); reads <root>:nodes (hash: id -> record JSON)
  Output: JSON text {"now":ms,"nodes":[record...]}
]]
--@include "time"

local now = nowMs()
local records = redis.call('HVALS', KEYS[1] .. ':nodes')
return '{"now":' .. int(now) .. ',"nodes":[' .. table.concat(records, ',') .. ']}'
