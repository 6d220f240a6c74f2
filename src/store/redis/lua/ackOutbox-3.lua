--[[
  ackOutbox: the queue accepted these published messages: each one that still carries the
  dedupId it was published with becomes its job's attempt-0 watch, recovered reapAfterMs after
  it was due
  (see include "outbox", ackMessages). Unfenced: harmless to repeat.
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages
    ARGV[1] reapAfterMs
    ARGV[2...] per message: id, dedupId, not-before ms ('' = now)
  Output: number of messages acknowledged
]]
--@include "time"
--@include "keys"
--@include "members"
--@include "outbox"

return ackMessages(KEYS[1], KEYS[2], KEYS[3], argvFrom(2), nowMs(), tonumber(ARGV[1]))
