--[[
  streamStats: what the Redis Streams queue holds now (include "streams").
  Input:
    KEYS[1] root
  Output: { stream length, pending in the group, age of the oldest pending delivery (ms; 0 when
            none), delayed deliveries, consumers in the group, deliveries taken over from stopped
            consumers since the metrics began (`<root>:metrics` s:claimed, by every worker) }
]]
--@include "time"
--@include "streams"

local stream = streamKey(KEYS[1])
local length = redis.call('XLEN', stream)
local delayed = redis.call('ZCARD', stream .. ':delayed')
local pending, oldest, consumers = 0, 0, 0
if length > 0 or redis.call('EXISTS', stream) == 1 then
  local ok, summary = pcall(redis.call, 'XPENDING', stream, STREAM_GROUP)
  if ok then
    pending = summary[1]
    if pending > 0 and summary[2] then
      -- Entry ids start with their creation time (ms): the oldest pending one's age.
      local ms = tonumber(string.match(summary[2], '^(%d+)-'))
      oldest = math.max(0, nowMs() - ms)
    end
    local groups = redis.call('XINFO', 'GROUPS', stream)
    for _, g in ipairs(groups) do
      for i = 1, #g - 1, 2 do
        if g[i] == 'name' and g[i + 1] == STREAM_GROUP then
          for j = 1, #g - 1, 2 do
            if g[j] == 'consumers' then
              consumers = g[j + 1]
            end
          end
        end
      end
    end
  end
end
local claimed = tonumber(redis.call('HGET', KEYS[1] .. ':metrics', 's:claimed')) or 0
return { length, pending, oldest, delayed, consumers, claimed }
