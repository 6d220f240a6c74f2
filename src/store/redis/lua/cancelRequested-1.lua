--[[
  cancelRequested: is a cancel asked for while `attempt` runs? One read, nothing written: what the
  runner polls while a handler runs.
  Input:
    KEYS[1] root
    ARGV[1] id
    ARGV[2] attempt
  Output: 1 when the job is `running` as `attempt` with `cancelRequested`, else 0
]]
--@include "keys"

local v = redis.call('HMGET', jobKey(KEYS[1], ARGV[1]), 'status', 'attempts', 'cancelRequested')
if v[1] == 'running' and tonumber(v[2]) == tonumber(ARGV[2]) and v[3] then
  return 1
end
return 0
