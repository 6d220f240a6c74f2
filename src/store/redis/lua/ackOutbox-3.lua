--[[
  ackOutbox: the queue accepted these published messages: each one that still carries the
  dedupId it was published with becomes its job's attempt-0 watch, recovered after reapAfterMs
  (see include "outbox", ackMessages). Unfenced: harmless to repeat.
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages
    ARGV[1] reapAfterMs
    ARGV[2...] pairs: message id, dedupId
  Output: number of messages acknowledged
]]
--@include "time"
--@include "keys"
--@include "members"
--@include "outbox"

return ackMessages(KEYS[1], KEYS[2], KEYS[3], argvFrom(2), int(nowMs() + tonumber(ARGV[1])))
