--[[
  webhookLog: every webhook counter, and the last deliveries of the endpoints asked for (lists
  written by submitJob, newest first), in one round trip.
  Input:
    KEYS[1] root (the hash tag); reads <root>:hooks and <root>:hook:<n>:<endpoint>
    ARGV[1] how many deliveries per endpoint (0 = none)
    ARGV[2..] endpoint names
  Output: JSON text {"counts":{field:"count"...},"log":{endpoint:[entry...]...}}
]]
--@include "json"
--@include "keys"

local root = KEYS[1]
local flat = redis.call('HGETALL', hookCountsKey(root))
local counts = {}
for i = 1, #flat - 1, 2 do
  counts[#counts + 1] = jsonString(flat[i]) .. ':' .. jsonString(flat[i + 1])
end
local n = tonumber(ARGV[1])
local log = {}
if n > 0 then
  for i = 2, #ARGV do
    local entries = redis.call('LRANGE', hookLogKey(root, ARGV[i]), 0, n - 1)
    log[#log + 1] = jsonString(ARGV[i]) .. ':[' .. table.concat(entries, ',') .. ']'
  end
end
return '{"counts":{' .. table.concat(counts, ',') .. '},"log":{' .. table.concat(log, ',') .. '}}'
