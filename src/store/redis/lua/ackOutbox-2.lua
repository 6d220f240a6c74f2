--[[
  ackOutbox: remove published messages from the outbox, compare-and-delete on (id, dedupId).
  Unfenced: harmless to repeat.
  Input:
    KEYS[1] outbox
    KEYS[2] outbox messages
    ARGV[...] pairs: message id, dedupId
  Output: number of messages removed
]]
--@include "members"
--@include "outbox"

return ackMessages(KEYS[1], KEYS[2], argvFrom(1))
