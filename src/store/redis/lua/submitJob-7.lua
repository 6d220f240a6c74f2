--[[
  submitJob: accept a job in one round trip. In this order:
  0. Its job already stored means this submit ran before (re-sent after its reply was lost):
     its answer again, nothing written or counted (include "job": submittedBefore). Told by the
     job's tenant listing (ZADD NX, the listing write a submit makes anyway; a refusal below
     removes it) or, with an idempotency key, by the key naming this job.
  1. If the tenant's idempotency key is known (and its job still exists) returns that job and
     writes nothing (nothing evaluated, nothing counted) but, for a webhook (ARGV[21]), its
     `replayed` counter and history entry.
  2. With a degradation policy: evaluates the controller (its state is kept even if the submit
     is refused), then degraded → runAt += degradedDelayMs; critical → denied (reject) or
     runAt += criticalDelayMs (delay).
  3. With a quota: denied → nothing written, nothing counted; else counted.
  4. Stamps createdAt = now and runAt = runAt or now + delayMs (+ the degradation delay), writes
     the `queued` job, indexes it, remembers the key, puts the job's first message in the outbox
     (its entry: the body is the job's, include "outbox"; or, dispatching to streams, its
     delivery on the stream) and the job in the pending backlog, counts it (t:submitted,
     g:queued) and writes `job.created`. A Streams job due at once stays out of the backlog
     index, its hash has `onStream`, and s:in counts it instead (include "metrics").
  Input:
    KEYS[1] root
    KEYS[2] outbox
    KEYS[3] outbox messages (not written: a job's first message has no body, include "outbox")
    KEYS[4] pending backlog (zset: job id -> runAt)
    KEYS[5] metrics (hash)
    KEYS[6] events (stream)
    KEYS[7] degradation state (hash)
    ARGV[1] id
    ARGV[2] JobSpec JSON without createdAt and runAt
    ARGV[3] runAt ('' = now + delayMs)
    ARGV[4] delayMs
    ARGV[5] recoverGraceMs
    ARGV[6] tenant
    ARGV[7] handler
    ARGV[8] the store's settings: `eventsMaxLen dispatch jobMs maxJobs maxRuns` (include
            "settings"). eventsMaxLen 0 = no events; dispatch `outbox` (a queue publishes the
            job) or `streams` (straight onto the Redis Streams queue, include "streams": no
            outbox entry, nothing to publish); retention `jobMs maxJobs maxRuns` (a job whose
            dependency already failed is stored `cancelled`)
    ARGV[9] the degradation settings ('' = no policy): `degradedDelayMs criticalAction
            criticalDelayMs retryAfterMs evaluateEveryMs;policy` (include "settings"): the
            critical action `reject` or `delay`; retryAfterMs of a critical rejection; the
            stored level is reused when evaluated less than evaluateEveryMs ago (0 = evaluate
            on every submit); the policy as include "degrade" parses it
    ARGV[10] the `job.created` event after its "at" member, closing brace included:
             `,"jobId":…,"handler":…,"tenant":…` (then "scheduleId", "webhook" when set)
  The rest may be left out when empty (absent reads as ''):
    ARGV[11] idempotency key ('' = none)
    ARGV[12] idempotencyMs
    ARGV[13] scheduleId ('' = none)
    ARGV[14] overlap ('' = none)
    ARGV[15] fireAt ('' = none; the runs index score, else runAt)
    ARGV[16] quota key ('' = none)
    ARGV[17] quota windows (`windowMs limit ...`)
    ARGV[18] dependencies: job ids separated by spaces ('' = none; include "deps", ADR 0014)
    ARGV[19] onFailure: 'run' or '' (cancel)
    ARGV[20] keep: '' or ms — the job's key has a TTL of its own (a webhook's sender's retry
             window, however it compares with the store's): the job hash gets
             `keepUntil = now + ms`, which retention honours (include "job": retainJob,
             dropFinished)
    ARGV[21] webhook endpoint ('' = none): count `accepted` (or `replayed`, on a replay) in
             `<root>:hooks`, push the delivery onto `<root>:hook:<n>:<endpoint>` (capped), and
             add `"webhook"` to job.created
    ARGV[22] the webhook's event id ('' = none)
    ARGV[23] how many deliveries the endpoint's history keeps (WEBHOOK_HISTORY,
             src/store/port/webhooks.ts; '' without a webhook)
  With dependencies, after the replay check: an id that names no job of the tenant ->
  {"unknown":[ids]}, nothing written. All succeeded (or failed, with onFailure 'run') -> an
  ordinary submit. Else, once admitted: a failed one and onFailure cancel -> stored `cancelled`;
  otherwise stored `waiting` (no outbox entry, no stream entry, not pending; counted g:waiting)
  with `waits` = its unfinished dependencies (an id named twice counts once), listed in each
  one's `<root>:deps:<id>`.
  Output: JSON text
    {"createdAt":ms,"runAt":ms,"quota"?:QuotaState,"degradation"?:{"level":..,"delayedMs":ms}}
                                  written; the caller knows the rest of the job and message
    {"replayed":JobRecord}        the key was used: the first job
    {"denied":Denied}             refused by admission control; nothing written
    {"unknown":[id…]}             dependencies that name no job of the tenant; nothing written
    a written job that is not queued adds "status":"waiting"|"cancelled" (and "finishedAt")
]]
--@include "time"
--@include "submit"

submitStart()
local answer = submitAt(0, #ARGV, nowMs())
submitFlush()
return answer
