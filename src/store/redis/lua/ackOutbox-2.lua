--[[
  ackOutbox: remove published messages from the outbox. Unfenced: harmless to repeat.
  Input:
    KEYS[1] outbox
    KEYS[2] outbox messages
    ARGV[...] message ids
  Output: number of messages removed
]]
--@include "members"
--@include "outbox"

local ids = argvFrom(1)
if #ids == 0 then
  return 0
end
local removed = removeMembers('ZREM', KEYS[1], ids)
removeMembers('HDEL', KEYS[2], ids)
return removed
