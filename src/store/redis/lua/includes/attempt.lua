--[[
  Include "attempt" (needs "time"): a running attempt's writes, fenced by its attempt number.

  Job hash fields it reads and writes (beside those of include "job"):
    progress          the last progress value, JSON text (at most 4 KiB, checked in TS)
    progressAt        ms, when it was reported
    cancelRequested   1 once a cancel was asked for while the job ran (cancelJob)
    logSeq            position of the last log entry written (1-based), absent before the first
    log:<n>           log entry n, JSON text; only the last LOG_KEEP positions are kept

  attemptHolder(key, attempt, now)
                    The job's fields { status, attempts, leaseUntil, cancelRequested, logSeq }
                    (one HMGET) if it is `running` as `attempt` under an unexpired run lease,
                    else nil.
  attemptAnswer(f)  The write's JSON answer: {"ok":true,"cancelRequested":bool}.
]]
local LOG_KEEP = 100

local function attemptHolder(key, attempt, now)
  local v = redis.call('HMGET', key, 'status', 'attempts', 'leaseUntil', 'cancelRequested',
    'logSeq')
  if v[1] ~= 'running' or tonumber(v[2]) ~= tonumber(attempt) then
    return nil
  end
  if not v[3] or tonumber(v[3]) <= now then
    return nil
  end
  return { status = v[1], attempts = v[2], leaseUntil = v[3], cancelRequested = v[4],
    logSeq = v[5] }
end

local function attemptAnswer(f)
  if f.cancelRequested then
    return '{"ok":true,"cancelRequested":true}'
  end
  return '{"ok":true,"cancelRequested":false}'
end
