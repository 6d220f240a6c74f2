--[[
  countWebhook: one more request of a webhook endpoint with an outcome decided before any submit
  (a bad signature, an unknown endpoint, an oversized body, …); `accepted` and `replayed` are
  counted by submitJob itself. The caller bounds the endpoint names (configured ones, or
  `_unknown`), so the hash stays small.
  Input:
    KEYS[1] webhook counters (hash: `<outcome>:<endpoint>` -> count)
    ARGV[1] outcome
    ARGV[2] endpoint
  Output: the new count
]]

return redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':' .. ARGV[2], 1)
