--[[
  beginRun: a delivery arrived. Creates the job from the spec if missing and it has a
  scheduleId (else answers missing, removing a leftover outbox message), then decides:
    final status                                   -> final (do not run); a leftover pending
                                                      entry and outbox message are dropped
                                                      (g:queued with it)
    running with an unexpired run lease            -> busy (the queue retries later); the
                                                      running attempt's watch stays
    an occurrence that never started (attempts 0, no attemptBase: not retried from the
    dead-letter list) whose schedule (`<root>:s:<scheduleId>`) is paused or missing
                                                   -> the job is `skipped` (and retained)
    overlap `skip` and another job of the schedule holds the schedule's run lease
                                                   -> the job is `skipped` (and retained) if it
                                                      never started (attempts 0), else busy
    a concurrency limit (D[15], D[16]) whose slot set, once members whose lease ended are
    dropped, holds `limit` other jobs     -> limited (not an attempt: the job is unchanged, no
                                             event; its outbox entry's recoverAt moves to
                                             now + retryAfterMs + reapAfterMs; t:limited),
                                             retryAfterMs until
                                             the earliest lease end (at least 250 ms)
    a rate limit (D[17..19]) whose window, once starts at or before now - period are dropped,
    holds `rate` starts                   -> limited likewise, retryAfterMs until enough starts
                                             leave the window (at least 250 ms); with both
                                             limits refusing, the longer wait. Neither limit
                                             takes anything unless both admit.
    else `running`, attempts + 1, startedAt = now, run lease until now + leaseMs (and the
    schedule's run lease, for overlap `skip`), and the job's outbox message becomes the attempt's
    watch: dedupId `<id>~a<attempt>`, `attempt`, recoverAt = lease end + reapAfterMs (the tick
    re-dispatches the job if the queue never delivers again and never calls back). Under a
    limit the run takes a slot (member id, score = the run lease's end) and the job's `slot`
    field names the set, so finishRun, markDead and cancelJob release it; a slot it held in
    another set (its limit key changed) is left. Under a rate limit the run's start is counted
    in the window (member `<id>:<attempt>`, score now; the window expires a period after it).
  `running` with `cancelRequested` (cancelJob) whose run lease ran out -> `cancelled` (retained,
  t:cancelled, `job.cancelled`, its dependents released as after a failure) and answered final.
  `final` and `skipped` remove the job's outbox message.
  `run` and `skipped` leave the pending backlog, count (t:started or t:skipped, the gauges; the
  first attempt's dispatch lag in the `lag` histogram and average) and write `job.started` /
  `job.skipped`.
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages
    KEYS[4] expiring index
    KEYS[5] pending backlog
    KEYS[6] metrics
    KEYS[7] events
    ARGV[1] retention: `jobMs maxJobs maxRuns` (see include "job")
    ARGV[2] eventsMaxLen (0 = no events)
    ARGV[3..] the delivery, D[i] = ARGV[2 + i] (beginRuns sends several of these); from D[11]
    on, trailing '' may be left out (an absent one reads as ''):
    D[1..9] the JobSpec (see include "spec")
    D[10] leaseMs
    D[11] reapAfterMs ('' = no watch, Redis Streams: the run removes the job's outbox message
          instead of making it the attempt's watch, and `limited` defers nothing)
    D[12] the node that begins the run (its instanceId; '' = none): stored as the job's `node`
          (a previous attempt's node is dropped)
    D[13] delivery token id ('' = none): a token seen before is this delivery again (a replay,
          or the request re-sent after its answer was lost): nothing written or counted, and
          busy while the attempt it began still runs under its lease; busy again when it was
          first told to wait (busy or limited: it has not run); else replayed
    D[14] delivery token expiry (ms)
    D[15] concurrency limit, 1..10000 ('' = none)
    D[16] the limit key (the slot set is limitKey(root, key))
    D[17] rate limit, 1..100000 ('' = none)
    D[18] the rate limit's period (ms)
    D[19] the rate key (the window is rateKey(root, key))
  Output: JSON text
    {"kind":"run","attempt":n,"job":JobRecord} | {"kind":"final","job":JobRecord}
    {"kind":"busy","retryAfterMs":ms}          | {"kind":"skipped","job":JobRecord}
    {"kind":"missing"}                         | {"kind":"replayed"}
    {"kind":"limited","retryAfterMs":ms}
]]
--@include "time"
--@include "metrics"
--@include "begin"

local m = newMetrics()
local answer = beginRunAt(2, #ARGV - 2, ARGV[1], numberOf(ARGV[2]), nowMs(), m)
metricsFlush(KEYS[6], m)
return answer
