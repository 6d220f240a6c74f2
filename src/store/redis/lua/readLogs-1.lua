--[[
  readLogs: a job's log, oldest kept entry first (see include "attempt" for where it lives).
  Input:
    KEYS[1] root
    ARGV[1] id
    ARGV[2] limit (1..100)
    ARGV[3] the position to start from (1-based; 1 = the oldest kept)
  Output: nil when the job is missing, else JSON text {"items":[entry...],"cursor"?:"<n>"}
    (cursor: the next position, absent once the last entry is returned)
]]
--@include "time"
--@include "keys"
--@include "attempt"

local key = jobKey(KEYS[1], ARGV[1])
local head = redis.call('HMGET', key, 'status', 'logSeq')
if not head[1] then
  return false
end
local last = tonumber(head[2]) or 0
local first = math.max(tonumber(ARGV[3]), last - LOG_KEEP + 1, 1)
local stop = math.min(first + tonumber(ARGV[2]) - 1, last)
if stop < first then
  return '{"items":[]}'
end
local fields = {}
for n = first, stop do
  fields[#fields + 1] = 'log:' .. int(n)
end
local items = {}
for _, entry in ipairs(redis.call('HMGET', key, unpack(fields))) do
  if entry then
    items[#items + 1] = entry
  end
end
local out = '{"items":[' .. table.concat(items, ',') .. ']'
if stop < last then
  out = out .. ',"cursor":"' .. int(stop + 1) .. '"'
end
return out .. '}'
