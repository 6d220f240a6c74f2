--[[
  endTick: last step of a tick. Acknowledges published messages (they become attempt-0 watches,
  see include "outbox", ackMessages), records the tick's report (tick duration and lease acquisition histograms,
  even if the lease was lost) and releases the tick lease if `token` still holds it.
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages
    KEYS[4] tick lease
    KEYS[5] metrics
    ARGV[1] token
    ARGV[2] tick duration ms ('' = no report)
    ARGV[3] lease acquisition ms
    ARGV[4] reapAfterMs
    ARGV[5...] per message: id, dedupId, not-before ms ('' = now)
  Output: 1 lease released, 0 it was no longer ours
]]
--@include "time"
--@include "keys"
--@include "lease"
--@include "members"
--@include "outbox"
--@include "metrics"

ackMessages(KEYS[1], KEYS[2], KEYS[3], argvFrom(5), nowMs(), tonumber(ARGV[4]))
if ARGV[2] ~= '' then
  local m = newMetrics()
  mObserve(m, 'tick', tonumber(ARGV[2]))
  mObserve(m, 'acq', tonumber(ARGV[3]))
  metricsFlush(KEYS[5], m)
end
if not holdsLease(KEYS[4], ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[4])
return 1
