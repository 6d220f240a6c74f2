--[[
  finishRuns: finishRun for several attempts in one call (a worker's attempts that ended
  together: one round trip, one TIME and one metrics batch for all of them). Each attempt is
  recorded exactly as finishRun records it, in order, at the same `now`; one whose recording
  raises an error answers that error and the others go on. The sweep of expired jobs takes up
  to 20 per recorded attempt, as that many finishRun calls would.
  Input:
    KEYS[1] root, KEYS[2] expiring index, KEYS[3] pending backlog, KEYS[4] metrics,
    KEYS[5] events, KEYS[6] outbox, KEYS[7] outbox messages (as finishRun's)
    ARGV[1] n, how many arguments each attempt has
    ARGV[2] retention, ARGV[3] eventsMaxLen (as finishRun's ARGV[1], ARGV[2])
    ARGV[4..] n arguments per attempt, each group a finishRun attempt's A[1..n] ('' for an
    absent one; an attempt's arguments past n read as '')
  Output: a list, one per attempt in order: finishRun's output (JOB_NOT_FOUND or JSON text), or
  `!` and the error text
]]
--@include "time"
--@include "job"
--@include "metrics"
--@include "caught"
--@include "finish"

local now, m, answers, recorded = nowMs(), newMetrics(), {}, 0
local n, retention, maxLen = tonumber(ARGV[1]), ARGV[2], numberOf(ARGV[3])
for a = 3, #ARGV - n, n do
  local ok, answer, used = pcall(finishRunAt, a, n, retention, maxLen, now, m)
  if not ok then
    answer = '!' .. errorText(answer)
  elseif used then
    recorded = recorded + 1
  end
  answers[#answers + 1] = answer
end
metricsFlush(KEYS[4], m)
if recorded > 0 then
  sweepExpired(KEYS[1], KEYS[2], now, 20 * recorded)
end
return answers
