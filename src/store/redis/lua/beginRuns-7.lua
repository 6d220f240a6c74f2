--[[
  beginRuns: beginRun for several deliveries in one call (a worker's deliveries that arrived
  together: one round trip, one TIME and one metrics batch for all of them). Each delivery is
  decided exactly as beginRun decides it, in order, at the same `now`; a delivery whose decision
  raises an error (a command refused) answers that error and the others go on.
  Input:
    KEYS[1] root, KEYS[2] outbox, KEYS[3] outbox messages, KEYS[4] expiring index,
    KEYS[5] pending backlog, KEYS[6] metrics, KEYS[7] events (as beginRun's)
    ARGV[1] n, how many arguments each delivery has
    ARGV[2] retention, ARGV[3] eventsMaxLen (as beginRun's ARGV[1], ARGV[2])
    ARGV[4..] n arguments per delivery, each group a beginRun delivery's D[1..n] ('' for an
    absent one; a delivery's arguments past n read as '')
  Output: a list, one per delivery in order: beginRun's JSON text, or `!` and the error text
]]
--@include "time"
--@include "metrics"
--@include "caught"
--@include "begin"

local now, m, answers = nowMs(), newMetrics(), {}
local n, retention, maxLen = tonumber(ARGV[1]), ARGV[2], numberOf(ARGV[3])
for a = 3, #ARGV - n, n do
  local ok, answer = pcall(beginRunAt, a, n, retention, maxLen, now, m)
  answers[#answers + 1] = ok and answer or ('!' .. errorText(answer))
end
metricsFlush(KEYS[6], m)
return answers
