/**
 * @module
 * Every Redis key tickwork uses, built in one place. All keys share one hash tag (`{prefix}`),
 * so every script touches a single Redis Cluster slot.
 */

/** Builds the keys for one deployment. `prefix` defaults to `"tw"`; tests use a random one. */
export function keys(prefix = "tw") {
  const p = `{${prefix}}`;
  return {
    /** Hash tag root, passed to scripts that build per-id keys themselves. */
    root: p,
    /** zset: active schedule id → nextRunAt (ms). */
    due: `${p}:sched`,
    /**
     * zset: a tenant's schedule ids → createdAt (ms), for listing. One index per tenant, so a
     * listing reads only the caller's records (the tenant is length-prefixed, as below).
     */
    schedules: (tenant: string) => `${p}:schedules:${utf8Length(tenant)}:${tenant}`,
    /** hash: one schedule. */
    schedule: (id: string) => `${p}:s:${id}`,
    /**
     * string: job id of the occurrence currently running for an overlap-`skip` schedule. A name
     * space of its own: under `:s:` (as `<id>:running` once was) the default tenant's schedule
     * `acme` held the key of tenant `acme`'s schedule `running` (docs/adr/0049-key-spaces.md).
     */
    scheduleRunning: (id: string) => `${p}:overlap:${id}`,
    /** zset: job ids a schedule fired → fireAt (ms). */
    runs: (scheduleId: string) => `${p}:runs:${scheduleId}`,
    /** hash: one job. */
    job: (id: string) => `${p}:j:${id}`,
    /** zset: a tenant's job ids → createdAt (ms), for listing (one index per tenant). */
    jobs: (tenant: string) => `${p}:jobs:${utf8Length(tenant)}:${tenant}`,
    /** zset: message id → recoverAt (ms). */
    outbox: `${p}:outbox`,
    /**
     * hash: message id → message JSON; none for a job's first message, which the scripts derive
     * from the job (docs/adr/0029-a-job-first-message-has-no-body.md).
     */
    outboxMsg: `${p}:outbox:msg`,
    /**
     * string: fencing token of the lease holder, with a TTL. A lease may have any name, and the
     * sequence (`leaseSeq`) is `lease:seq` in this space: the names `seq`, `seq~`, `seq~~`… take
     * one `~` more, so no name is the sequence's key, no two names share a key, and every other
     * name (`tick`) keeps the key it had (docs/adr/0049-key-spaces.md).
     */
    lease: (name: string) => `${p}:lease:${SEQ_LIKE.test(name) ? `${name}~` : name}`,
    /**
     * string: fencing-token sequence (INCR). It stays where deployments have it, so servers of
     * the version before and after share it while they run side by side.
     */
    leaseSeq: `${p}:lease:seq`,
    /**
     * string: a delivery's signature id (`jti`), kept until the signature expires; a delivery whose
     * id is already here is a replay and changes nothing.
     */
    delivery: (tokenId: string) => `${p}:delivery:${tokenId}`,
    /** set: ids of the `waiting` jobs that wait for job `id` (ADR 0014). */
    deps: (id: string) => `${p}:deps:${id}`,
    /** string: a job deleted from the dead-letter list (kept for the retention), never re-created. */
    gone: (id: string) => `${p}:gone:${id}`,
    /**
     * string: job id for a tenant's idempotency key. The tenant is prefixed with its length in
     * UTF-8 bytes (as Lua's `#` counts), so a `:` in a tenant cannot collide with another's key.
     */
    idempotency: (tenant: string, key: string) =>
      `${p}:idem:${utf8Length(tenant)}:${tenant}:${key}`,
    /**
     * string: schedule rev sequence. A created schedule's rev is drawn from it (INCR);
     * deleteSchedule raises it to the deleted rev, so a re-created id never repeats a rev.
     */
    revSeq: `${p}:rev:seq`,
    /** zset: a tenant's dead job ids → time they died (ms) (one list per tenant). */
    dlq: (tenant: string) => `${p}:dlq:${utf8Length(tenant)}:${tenant}`,
    /**
     * zset: retained (final) jobs → time their record expires (ms). Member: JSON
     * `[jobId, tenant]` or `[jobId, tenant, scheduleId]`. Lets the store drop expired jobs from
     * the listing indexes (`jobs`, `dlq`, `runs`) in bounded steps instead of scanning them.
     */
    expiring: `${p}:expiring`,
    /**
     * zset: the due backlog — queued jobs (and committed occurrences) → runAt, failed jobs →
     * failure time; `ZCOUNT pending -inf now` is `StoreStats.backlog` (the queue-depth signal),
     * with the jobs a Streams submit queued due at once, which stay out of this index: the stream
     * is their queue, and the metrics hash counts them (`s:in`, `s:out`).
     */
    pending: `${p}:pending`,
    /**
     * hash: counters (`t:<total>`, `s:in|out`), gauges (`g:queued|running|failed`), histogram
     * buckets (`<h>:<i>`, `<h>:sum`) and moving averages (`avg:lag`, `avg:fail`); see include
     * "metrics".
     */
    metrics: `${p}:metrics`,
    /** stream: lifecycle events, one field `e` holding the event JSON (capped at eventsMaxLen). */
    events: `${p}:events`,
    /**
     * string: one quota's counters, every window's buckets (see include "quota"). The quota key
     * is prefixed with its length in UTF-8 bytes, like the idempotency key's tenant.
     */
    quota: (key: string) => `${p}:quota:${utf8Length(key)}:${key}`,
    /**
     * zset: one concurrency limit's slots — job id → its run lease's end (ms); members whose lease
     * ended are dropped by the next `beginRun` of the key. The limit key (see `RunLimit`) is
     * prefixed with its length in UTF-8 bytes, like the quota key.
     */
    limit: (key: string) => `${p}:limit:${utf8Length(key)}:${key}`,
    /**
     * zset: one rate limit's window — `<job id>:<attempt>` of each run begun in the last period →
     * the time it began (ms); older starts are dropped by the next `beginRun` of the key, and the
     * key expires one period after its newest start. Length-prefixed like the limit key.
     */
    rate: (key: string) => `${p}:rate:${utf8Length(key)}:${key}`,
    /** hash: the degradation controller's shared state (level, since, pending, signals). */
    degrade: `${p}:degrade`,
    /** hash: the tick leader (holder, acquiredAt, changes, flaps). */
    leader: `${p}:leader`,
    /**
     * hash: the node registry, node id → its record JSON (with `lastSeen` and `ttlMs`). The
     * scripts `heartbeatNode`, `removeNode` and `listNodes` build it from the root.
     */
    nodes: `${p}:nodes`,
    /** zset: node id → when it is dropped (lastSeen + 10 × its TTL), pruned by heartbeats. */
    nodesExpiry: `${p}:nodes:expiry`,
    /**
     * list: a webhook endpoint's last deliveries, newest first (`WEBHOOK_HISTORY` of them), each
     * `{"at","eventId"?,"outcome","jobId"}`; written by `submitJob`. Length-prefixed like `quota`.
     */
    hookLog: (endpoint: string) => `${p}:hook:${utf8Length(endpoint)}:${endpoint}`,
    /** hash: webhook counters, `<outcome>:<endpoint>` → count (docs/webhooks.md). */
    hookCounts: `${p}:hooks`,
  };
}

/** The lease names whose key takes one `~` more: `seq` (the sequence's) and those made from it. */
const SEQ_LIKE = /^seq~*$/;

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

export type Keys = ReturnType<typeof keys>;
