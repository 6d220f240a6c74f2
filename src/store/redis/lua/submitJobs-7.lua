--[[
  submitJobs: submitJob for several jobs in one call (the submits a server made at once: one
  round trip, one TIME, one degradation read and one write of the counters for all of them).
  Each job is decided exactly as submitJob decides it, in order, at the same `now` (include
  "submit"); a submit whose decision raises an error (a command refused) answers that error and
  the others go on.
  Input:
    KEYS[1] root, KEYS[2] outbox, KEYS[3] outbox messages, KEYS[4] pending backlog,
    KEYS[5] metrics, KEYS[6] events, KEYS[7] degradation state (as submitJob's)
    ARGV[1] n, how many arguments each submit has
    ARGV[2..] n arguments per submit, each group a submitJob's ARGV[1..n] ('' for an absent one;
    a submit's arguments past n read as '')
  Output: a list, one per submit in order: submitJob's JSON text, or `!` and the error text
]]
--@include "time"
--@include "caught"
--@include "submit"

submitStart()
local now, answers = nowMs(), {}
local n = tonumber(ARGV[1])
for a = 1, #ARGV - n, n do
  local ok, answer = pcall(submitAt, a, n, now)
  answers[#answers + 1] = ok and answer or ('!' .. errorText(answer))
end
submitFlush()
return answers
