--[[
  removeNode: deregister a node (graceful shutdown). Keys built from the root, as in
  heartbeatNode: <root>:nodes (hash) and <root>:nodes:expiry (zset).
  Input:
    KEYS[1] root (the hash tag, e.g. `{tw}`)
    ARGV[1] node id
  Output: 1 removed, 0 unknown
]]
local nodes = KEYS[1] .. ':nodes'
redis.call('ZREM', nodes .. ':expiry', ARGV[1])
return redis.call('HDEL', nodes, ARGV[1])
