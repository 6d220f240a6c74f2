--[[
  heartbeatNode: register or refresh a node (upsert by id) and drop nodes silent too long, at
  most `prune` of them per call. Keys, built from the root (keys.ts `nodes`, `nodesExpiry`):
    <root>:nodes         hash: node id -> record JSON (the caller's, plus lastSeen and ttlMs)
    <root>:nodes:expiry  zset: node id -> when it is dropped (lastSeen + dropTtls x ttlMs)
  A new node past `maxNodes` evicts the one closest to being dropped, so the registry never holds
  more than `maxNodes` records of at most `maxBytes` each.
  Input:
    KEYS[1] root (the hash tag, e.g. `{tw}`)
    ARGV[1] node id
    ARGV[2] the record: a compact JSON object (checked and written by the caller)
    ARGV[3] ttlMs
    ARGV[4] dropTtls: a node silent this many TTLs is dropped
    ARGV[5] prune: most dropped nodes removed per call
    ARGV[6] maxNodes
    ARGV[7] maxIdBytes
    ARGV[8] maxBytes (of the record)
  Output: 1 registered; 0 refused (nothing written): an empty or too long id, a record that is
          not a JSON object or too large, a TTL that is not a positive whole number
]]
--@include "time"
--@include "json"

local id, record, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local dropTtls, prune, maxNodes = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
if #id == 0 or #id > tonumber(ARGV[7]) or #record > tonumber(ARGV[8])
  or string.sub(record, 1, 1) ~= '{' or string.sub(record, -1) ~= '}'
  or not ttl or ttl < 1 or ttl ~= math.floor(ttl) then
  return 0
end

local nodes = KEYS[1] .. ':nodes'
local expiry = nodes .. ':expiry'
local now = nowMs()

local dropped = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, prune)
if #dropped > 0 then
  redis.call('ZREM', expiry, unpack(dropped))
  redis.call('HDEL', nodes, unpack(dropped))
end

redis.call('HSET', nodes, id, jsonExtend(record, '"lastSeen":' .. int(now) .. ',"ttlMs":' .. int(ttl)))
local added = redis.call('ZADD', expiry, now + dropTtls * ttl, id)
if added == 1 and redis.call('ZCARD', expiry) > maxNodes then
  local first = redis.call('ZRANGE', expiry, 0, 1)
  local victim = first[1]
  if victim == id then
    victim = first[2]
  end
  if victim then
    redis.call('ZREM', expiry, victim)
    redis.call('HDEL', nodes, victim)
  end
end
return 1
