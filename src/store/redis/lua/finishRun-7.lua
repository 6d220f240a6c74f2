--[[
  finishRun: record how an attempt ended, only if the job is `running` as that attempt.
  Success -> `succeeded` with the result (and no error); failure -> `failed` (back in the
  pending backlog, score now), or `dead` and listed in the dead-letter list when final.
  Releases the run lease, its concurrency slot and the schedule's overlap lease. Final records
  are retained jobMs.
  The attempt's watch (its outbox message, see beginRun) goes when the job is final; after a
  failure that will be retried it moves to now + reapAfterMs.
  A failure of a job with `cancelRequested` (cancelJob) -> `cancelled` (with the error), final
  whatever A[5] says: t:cancelled and `job.cancelled`, no failure counted.
  A final job releases its waiting dependents (include "deps", ADR 0014).
  Counts (handler duration, failure average, totals, gauges) and writes `job.succeeded`,
  `job.failed` or `job.dead`. Then sweeps up to 20 expired jobs from the listing indexes
  (bounded housekeeping; the records themselves expire by TTL).
  Input:
    KEYS[1] root
    KEYS[2] expiring index
    KEYS[3] pending backlog
    KEYS[4] metrics
    KEYS[5] events
    KEYS[6] outbox
    KEYS[7] outbox messages
    ARGV[1] retention: `jobMs maxJobs maxRuns` (see include "job")
    ARGV[2] eventsMaxLen (0 = no events)
    ARGV[3..] the attempt, A[i] = ARGV[2 + i] (finishRuns sends several of these); from A[4]
    on, trailing '' may be left out (an absent one reads as ''):
    A[1] id
    A[2] attempt
    A[3] 1 success, 2 success answered without the job, 0 failure
    A[4] result JSON ('' = none), on success
    A[5] 1 final failure (-> dead), else ('0' or '') it will be retried
    A[6] JobError JSON, on failure
    A[7] the event's error JSON ({name, message}), on failure
    A[8] reapAfterMs ('' = no watch, Redis Streams: nothing to remove or defer)
  Output:
    JOB_NOT_FOUND (-2)
    JSON text   {"ok":JobRecord} recorded, {"recorded":true} a success recorded when A[3] is 2,
                or {"stale":JobRecord} not running as that attempt
]]
--@include "time"
--@include "job"
--@include "metrics"
--@include "finish"

local m = newMetrics()
local answer, now = finishRunAt(2, #ARGV - 2, ARGV[1], numberOf(ARGV[2]), nil, m)
metricsFlush(KEYS[4], m)
if now then
  sweepExpired(KEYS[1], KEYS[2], now, 20)
end
return answer
