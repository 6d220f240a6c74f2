--[[
  endTick: last step of a tick. Acknowledges published messages (compare-and-delete on
  (id, dedupId)) and releases the tick lease
  if `token` still holds it.
  Input:
    KEYS[1] outbox
    KEYS[2] outbox messages
    KEYS[3] tick lease
    ARGV[1] token
    ARGV[2...] pairs: message id, dedupId
  Output: 1 lease released, 0 it was no longer ours
]]
--@include "lease"
--@include "members"
--@include "outbox"

ackMessages(KEYS[1], KEYS[2], argvFrom(2))
if not holdsLease(KEYS[3], ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[3])
return 1
