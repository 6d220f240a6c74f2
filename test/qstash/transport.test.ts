/**
 * QStashTransport against the QStash double: what it publishes (batches, not-before, dedup,
 * retries, timeout, failure callback, flow control), how it reports failures, and verify(); the
 * publish and failure suites once through the SDK's client (`fetch`) and once through
 * `nodeQStashHttp` (the `http` option, as `tickwork start` sends).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { nodeQStashHttp } from "../../src/adapter/node/qstash-http.ts";
import type { JobSpec, OutboxMessage } from "../../src/core/model.ts";
import type { FailureCallbackBody, PublishOutcome } from "../../src/transport/port.ts";
import {
  notBeforeSeconds,
  type QStashHttp,
  QStashPublishError,
  QStashTransport,
  type QStashTransportOptions,
} from "../../src/transport/qstash/index.ts";
import { until } from "../http/harness.ts";
import { type QStashDoubleOptions, startQStashDouble } from "../support/qstash-double/index.ts";
import { type Hit, ok, type Route, startEndpoint } from "./endpoint.ts";

const cleanups: Array<() => Promise<void>> = [];
/** How the suite under way sends its batches (see `senders`). */
let sender: QStashHttp | undefined;
const senders: [string, QStashHttp | undefined][] = [
  ["the SDK's client", undefined],
  ["nodeQStashHttp", nodeQStashHttp()],
];
afterEach(async () => {
  sender = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(
  routes: Record<string, Route>,
  options: Partial<QStashTransportOptions> = {},
  doubleOptions: QStashDoubleOptions = {},
) {
  const endpoint = await startEndpoint({ "/v1/dead": ok, ...routes });
  cleanups.push(() => endpoint.close());
  const qstash = await startQStashDouble({ backoffScale: 0.002, ...doubleOptions });
  cleanups.push(() => qstash.close());
  const workerUrl = `${endpoint.base}/v1/worker`;
  const transport = new QStashTransport({
    token: qstash.token,
    baseUrl: qstash.url,
    workerUrl,
    failureCallbackUrl: `${endpoint.base}/v1/dead`,
    currentSigningKey: qstash.currentSigningKey,
    nextSigningKey: qstash.nextSigningKey,
    retry: false,
    ...(sender ? { http: sender } : {}),
    ...options,
  });
  return { endpoint, qstash, transport, workerUrl };
}

let seq = 0;
function message(opts: Partial<JobSpec> & { notBefore?: number; dedupId?: string } = {}) {
  const { notBefore, dedupId, ...jobFields } = opts;
  const id = `job-${++seq}`;
  const job: JobSpec = {
    id,
    tenant: "default",
    handler: "echo",
    input: { n: seq, note: "héllo 🚀" },
    priority: 5,
    timeoutMs: 30_000,
    retries: 3,
    tags: [],
    runAt: 0,
    createdAt: 0,
    ...jobFields,
  };
  const msg: OutboxMessage = {
    id,
    dedupId: dedupId ?? id,
    job,
    notBefore: notBefore ?? 0,
    recoverAt: 0,
  };
  return msg;
}

function okIds(outcomes: PublishOutcome[]) {
  return outcomes.map((o) => (o.ok ? o.messageId : undefined));
}

const asDelivery = (hit: Hit, url: string) => ({ url, headers: hit.headers, body: hit.body });

describe.each(senders)("QStashTransport.publish through %s", (_, http) => {
  beforeEach(() => {
    sender = http;
  });

  it("publishes 250 messages in 3 batch requests; every job body arrives exactly", async () => {
    // No publish timeout to race on a busy machine: this test is about what arrives.
    const { endpoint, qstash, transport, workerUrl } = await setup(
      { "/v1/worker": ok },
      { publishTimeoutMs: 120_000 },
    );
    const messages = Array.from({ length: 250 }, () => message());
    const outcomes = await transport.publish(messages);
    expect(outcomes).toHaveLength(250);
    expect(outcomes.every((o, i) => o.ok && !o.deduplicated && o.id === messages[i]!.id)).toBe(
      true,
    );
    expect(new Set(okIds(outcomes)).size).toBe(250);
    expect(qstash.counters.requests).toEqual({ "POST /v2/batch": 3 });
    expect(qstash.counters.batchSizes).toEqual([100, 100, 50]);
    await qstash.idle();
    expect(endpoint.at("/v1/worker")).toHaveLength(250);
    const bodies = new Set(endpoint.at("/v1/worker").map((h) => h.body));
    for (const m of messages) expect(bodies.has(JSON.stringify(m.job))).toBe(true);
    const [stored] = qstash.messages();
    expect(stored).toMatchObject({
      url: workerUrl,
      maxRetries: 3,
      settings: {
        dedupKey: `id:${messages[0]!.dedupId}`,
        timeoutMs: 35_000, // job.timeoutMs + 5 s response grace, whole seconds
        failureCallback: `${endpoint.base}/v1/dead`,
      },
    });
  });

  it("sends notBefore as the whole second it falls in, and none for a message already due", async () => {
    const { endpoint, qstash, transport } = await setup({ "/v1/worker": ok });
    const now = Date.now();
    const later = message({ notBefore: now + 1_200 });
    const due = message({ notBefore: now - 5_000 });
    const outcomes = await transport.publish([later, due]);
    const byId = new Map(qstash.messages().map((m) => [m.messageId, m]));
    const laterStored = byId.get(outcomes[0]!.ok ? outcomes[0]!.messageId : "")!;
    const dueStored = byId.get(outcomes[1]!.ok ? outcomes[1]!.messageId : "")!;
    const second0 = Math.floor(later.notBefore / 1000) * 1000;
    expect(laterStored.notBefore).toBe(second0);
    expect(dueStored.notBefore).toBeGreaterThanOrEqual(now);
    await qstash.idle();
    // Found by id, not by order: on a busy machine the due one's delivery may take longer than
    // the fraction of a second until the later one's not-before second begins.
    const deliveries = endpoint.at("/v1/worker");
    const deliveredAt = (id: string) =>
      deliveries.filter((h) => (JSON.parse(h.body) as { id: string }).id === id).map((h) => h.at);
    expect(deliveredAt(due.id)).toHaveLength(1);
    const [laterAt, ...more] = deliveredAt(later.id);
    expect(more).toEqual([]);
    // Delivered from the start of that second (the runner waits out the rest).
    expect(laterAt).toBeGreaterThanOrEqual(second0);
  });

  it("rounds not-before down to the second it falls in", () => {
    // The second it falls in (the runner waits out the rest), or nothing once that has begun.
    expect(notBeforeSeconds(1_700_000_000_001, 1_699_999_000_000)).toBe(1_700_000_000);
    expect(notBeforeSeconds(1_700_000_000_999, 1_699_999_000_000)).toBe(1_700_000_000);
    expect(notBeforeSeconds(1_700_000_000_000, 1_699_999_000_000)).toBe(1_700_000_000);
    expect(notBeforeSeconds(1_700_000_000_000, 1_700_000_000_000)).toBeUndefined();
    expect(notBeforeSeconds(1_700_000_000_750, 1_700_000_000_100)).toBeUndefined();
    expect(notBeforeSeconds(1_700_000_001_000, 1_700_000_000_100)).toBe(1_700_000_001);
    expect(notBeforeSeconds(0, 1)).toBeUndefined();
    expect(notBeforeSeconds(Number.NaN, 1)).toBeUndefined();
  });

  it("deduplicates by dedupId: the second publish is ok, deduplicated, same messageId", async () => {
    const { endpoint, qstash, transport } = await setup({ "/v1/worker": ok });
    const first = message({ dedupId: "sched-1@1000" });
    const [a] = await transport.publish([first]);
    const [b, c] = await transport.publish([
      message({ dedupId: "sched-1@1000" }),
      message({ dedupId: "sched-1@2000" }),
    ]);
    expect(a).toMatchObject({ ok: true, deduplicated: false });
    expect(b).toMatchObject({ ok: true, deduplicated: true, messageId: a!.ok && a!.messageId });
    expect(c).toMatchObject({ ok: true, deduplicated: false });
    await qstash.idle();
    expect(endpoint.at("/v1/worker").map((h) => JSON.parse(h.body).id)).toEqual([first.id, c!.id]);
  });

  it("lets QStash retry with backoff until the worker succeeds; passes retryDelay", async () => {
    const { endpoint, qstash, transport } = await setup(
      { "/v1/worker": (_h, i) => (i < 2 ? { status: 500 } : { status: 200 }) },
      { retryDelay: "10 * (retried + 1)" },
    );
    await transport.publish([message({ retries: 3 })]);
    await qstash.idle();
    const hits = endpoint.at("/v1/worker");
    expect(hits.map((h) => h.headers.get("upstash-retried"))).toEqual(["0", "1", "2"]);
    expect(qstash.messages()[0]!.settings.retryDelay).toBe("10 * (retried + 1)");
    expect(qstash.counters).toMatchObject({ retries: 2, delivered: 1, failed: 0 });
    expect(endpoint.at("/v1/dead")).toHaveLength(0);
  });

  it("a 489 stops at once and the failure callback brings the documented body", async () => {
    const { endpoint, qstash, transport, workerUrl } = await setup({
      "/v1/worker": () => ({
        status: 489,
        headers: { "Upstash-NonRetryable-Error": "true", "content-type": "application/json" },
        body: '{"error":"bad input"}',
      }),
    });
    const msg = message({ retries: 3 });
    const [outcome] = await transport.publish([msg]);
    await qstash.idle();
    expect(endpoint.at("/v1/worker")).toHaveLength(1);
    const [callback] = endpoint.at("/v1/dead");
    const body = JSON.parse(callback!.body) as FailureCallbackBody;
    expect(body).toMatchObject({
      status: 489,
      header: expect.objectContaining({ "Upstash-Nonretryable-Error": ["true"] }),
      retried: 0,
      maxRetries: 3,
      dlqId: expect.any(String),
      sourceMessageId: outcome!.ok && outcome!.messageId,
      url: workerUrl,
      method: "POST",
      sourceHeader: { "Content-Type": ["application/json"] },
    });
    expect(Buffer.from(body.body, "base64").toString()).toBe('{"error":"bad input"}');
    expect(Buffer.from(body.sourceBody, "base64").toString()).toBe(JSON.stringify(msg.job));
    const deadUrl = `${endpoint.base}/v1/dead`;
    expect(await transport.verify(asDelivery(callback!, deadUrl))).toBe(true);
    expect(await transport.verify(asDelivery(callback!, workerUrl))).toBe(false);
  });

  it("a job with retries: 0 still gets its failure callback retried (at least 3 times)", async () => {
    // The callback's first answers fail (the reported attempt still holds its lease: 409; the
    // store is unreachable: 503). QStash gives a callback the message's own retries unless told:
    // none for retries: 0, and the job stayed `running` until the reaper.
    const { endpoint, qstash, transport } = await setup(
      {
        "/v1/worker": () => ({ status: 489, headers: { "Upstash-NonRetryable-Error": "true" } }),
        "/v1/dead": (_, index) => (index < 3 ? { status: 503 } : { status: 200, body: "{}" }),
      },
      {},
      // QStash's backoff (12 s, 2.5 min, 30 min) in milliseconds.
      { defaultBackoffScale: 0.001 },
    );
    await transport.publish([message({ retries: 0 })]);
    await qstash.idle();
    expect(endpoint.at("/v1/worker")).toHaveLength(1);
    expect(endpoint.at("/v1/dead")).toHaveLength(4);
  });

  it("configures flow control per handler (key defaults to the handler name)", async () => {
    const { endpoint, qstash, transport } = await setup(
      { "/v1/worker": () => ({ status: 200, delayMs: 30 }) },
      { flowControl: { slow: { parallelism: 1 }, shared: { key: "k", rate: 50, period: "1s" } } },
    );
    await transport.publish([
      ...[1, 2, 3].map(() => message({ handler: "slow" })),
      message({ handler: "shared" }),
      message({ handler: "free" }),
    ]);
    const flows = qstash.messages().map((m) => m.settings.flow);
    expect(flows).toEqual([
      { key: "slow", parallelism: 1, periodMs: 1000 },
      { key: "slow", parallelism: 1, periodMs: 1000 },
      { key: "slow", parallelism: 1, periodMs: 1000 },
      { key: "k", rate: 50, periodMs: 1000 },
      undefined,
    ]);
    await qstash.idle();
    const slow = endpoint.at("/v1/worker").filter((h) => JSON.parse(h.body).handler === "slow");
    for (let i = 1; i < slow.length; i++) {
      expect(slow[i]!.at - slow[i - 1]!.at).toBeGreaterThanOrEqual(25);
    }
  });

  it("publishes a job placed in a worker group to that group's URL, signed for it", async () => {
    const { endpoint, qstash, transport, workerUrl } = await setup(
      { "/v1/worker": ok, "/gpu/v1/worker": ok },
      {},
    );
    const gpuUrl = `${new URL(workerUrl).origin}/gpu/v1/worker`;
    const grouped = new QStashTransport({
      token: qstash.token,
      baseUrl: qstash.url,
      workerUrl,
      workerGroups: { gpu: gpuUrl },
      currentSigningKey: qstash.currentSigningKey,
      nextSigningKey: qstash.nextSigningKey,
      retry: false,
    });
    const placed = message({ placement: { group: "gpu" } });
    const unknown = message({ placement: { group: "arm" } });
    const plain = message({ placement: { capabilities: { gpu: "nvidia" } } });
    await grouped.publish([placed, unknown, plain]);
    await qstash.idle();
    const bodies = (path: string) => endpoint.at(path).map((h) => JSON.parse(h.body).id);
    expect(bodies("/gpu/v1/worker")).toEqual([placed.id]);
    // A group with no URL goes to the default worker (which refuses it, see docs/adr/0017-placement.md).
    expect(bodies("/v1/worker").sort()).toEqual([unknown.id, plain.id].sort());
    // The group's worker verifies with its own URL: the signature names it.
    const [hit] = endpoint.at("/gpu/v1/worker");
    expect(await transport.verify(asDelivery(hit!, gpuUrl))).not.toBe(false);
    expect(await transport.verify(asDelivery(hit!, workerUrl))).toBe(false);
  });

  it("a deployment in a group sends jobs without one to the `default` group's URL", async () => {
    const { endpoint, qstash, workerUrl } = await setup({
      "/main/v1/worker": ok,
      "/v1/worker": ok,
    });
    const mainUrl = `${new URL(workerUrl).origin}/main/v1/worker`;
    const inGroup = new QStashTransport({
      token: qstash.token,
      baseUrl: qstash.url,
      workerUrl, // its own: the gpu group's
      workerGroups: { gpu: workerUrl, default: mainUrl },
      currentSigningKey: qstash.currentSigningKey,
      nextSigningKey: qstash.nextSigningKey,
      retry: false,
    });
    const plain = message();
    const gpu = message({ placement: { group: "gpu" } });
    await inGroup.publish([plain, gpu]);
    await qstash.idle();
    expect(endpoint.at("/main/v1/worker").map((h) => JSON.parse(h.body).id)).toEqual([plain.id]);
    expect(endpoint.at("/v1/worker").map((h) => JSON.parse(h.body).id)).toEqual([gpu.id]);
  });
});

describe.each(senders)("QStashTransport failures never throw, through %s", (_, http) => {
  beforeEach(() => {
    sender = http;
  });

  it("a request that gets no answer is retried under `retry`, and fails without it", async () => {
    const answer = JSON.stringify([{ messageId: "msg_1" }]);
    const queue = await startEndpoint({
      "/v2/batch": (_, i) =>
        i % 3 < 2 ? { status: 0, drop: true } : { status: 200, body: answer },
    });
    cleanups.push(() => queue.close());
    const retrying = await setup(
      {},
      { baseUrl: queue.base, retry: { retries: 2, backoff: () => 1 } },
    );
    const [outcome] = await retrying.transport.publish([message()]);
    expect(outcome).toMatchObject({ ok: true, messageId: "msg_1" });
    expect(queue.at("/v2/batch")).toHaveLength(3);

    const once = await setup({}, { baseUrl: queue.base, retry: false });
    const [lost] = await once.transport.publish([message()]);
    expect(lost).toMatchObject({ ok: false, error: { reason: "request" } });
    expect(queue.at("/v2/batch")).toHaveLength(4);
  });

  it("a failed batch request gives each message of that chunk ok: false; other chunks go out", async () => {
    const { endpoint, qstash, transport } = await setup(
      { "/v1/worker": ok },
      {},
      { faults: { failPublishRequests: 1 } },
    );
    const messages = Array.from({ length: 150 }, () => message());
    const outcomes = await transport.publish(messages);
    const failed = outcomes.slice(0, 100);
    expect(failed.every((o) => !o.ok)).toBe(true);
    const error = !failed[0]!.ok ? failed[0]!.error : undefined;
    expect(error).toBeInstanceOf(QStashPublishError);
    expect(error).toMatchObject({ reason: "request", status: 500 });
    expect(outcomes.slice(100).every((o) => o.ok)).toBe(true);
    await qstash.idle();
    expect(endpoint.at("/v1/worker")).toHaveLength(50);
    // Published again (as the tick's recover step does): the failed chunk now goes out.
    const again = await transport.publish(messages.slice(0, 100));
    expect(again.every((o) => o.ok && !o.deduplicated)).toBe(true);
  });

  it("gives up on a slow request after publishTimeoutMs; a re-publish is deduplicated", async () => {
    // The request must reach the double before the client gives up (else nothing lands): a
    // second is ample for a local request even on a busy machine (100 ms was not); the double
    // answers a second after that.
    const { qstash, transport } = await setup(
      { "/v1/worker": ok },
      { publishTimeoutMs: 1_000 },
      { faults: { publishDelayMs: 2_000 } },
    );
    const messages = [message(), message()];
    const outcomes = await transport.publish(messages);
    expect(outcomes.map((o) => !o.ok && (o.error as QStashPublishError).reason)).toEqual([
      "timeout",
      "timeout",
    ]);
    qstash.faults.publishDelayMs = 0;
    await until(() => qstash.counters.messages >= 2, 20_000); // the slow request has landed
    const again = await transport.publish(messages);
    expect(again.map((o) => o.ok && o.deduplicated)).toEqual([true, true]);
  });

  it("a message due past the plan's longest delay stays in the outbox (deferred), one within it goes", async () => {
    const HOUR = 3_600_000;
    // QStash refuses a delay past the plan's longest; so does the double, told the plan's.
    const { qstash, transport } = await setup({}, { maxDelayMs: HOUR }, { maxDelayMs: HOUR });
    const now = Date.now();
    const far = message({ notBefore: now + 2 * HOUR });
    const near = message({ notBefore: now + HOUR / 2 });
    const [farOutcome, nearOutcome] = await transport.publish([far, near]);
    expect(nearOutcome?.ok).toBe(true);
    expect(farOutcome).toMatchObject({ ok: false, deferred: true });
    expect(((farOutcome as { error: unknown }).error as QStashPublishError).reason).toBe(
      "beyond-max-delay",
    );
    // Offered again once within the delay (a minute's margin for the clocks).
    const retryAt = (farOutcome as { retryAt: number }).retryAt;
    expect(retryAt).toBe(far.notBefore - HOUR + 60_000);
    expect(retryAt).toBeLessThan(far.notBefore);
    expect(qstash.counters.messages).toBe(1);
  });

  it("maxDelayMs defaults to the Free plan's 7 days and refuses less than 2 minutes", async () => {
    const { transport } = await setup({});
    const [outcome] = await transport.publish([
      message({ notBefore: Date.now() + 8 * 86_400_000 }),
    ]);
    expect(outcome).toMatchObject({ ok: false, deferred: true });
    await expect(setup({}, { maxDelayMs: 60_000 })).rejects.toThrow(/maxDelayMs/);
  });

  it("a network error (nothing listening) gives ok: false", async () => {
    // Port 1, where nothing listens (a port freed here could be given to a test beside this one).
    const { transport } = await setup({}, { baseUrl: "http://127.0.0.1:1" });
    const [outcome] = await transport.publish([message()]);
    expect(outcome).toMatchObject({ ok: false, error: { reason: "request" } });
  });

  it("a message that cannot be published, or that QStash refuses, fails alone", async () => {
    const { transport } = await setup({ "/v1/worker": ok });
    const bad = message({ retries: -1 });
    const good = message();
    const outcomes = await transport.publish([bad, good]);
    expect(outcomes[0]).toMatchObject({ id: bad.id, ok: false, error: { reason: "invalid" } });
    expect(outcomes[1]).toMatchObject({ id: good.id, ok: true });

    const refusing = await setup({ "/v1/worker": ok }, { retryDelay: "pow(2," });
    const [refused] = await refusing.transport.publish([message()]);
    expect(refused).toMatchObject({ ok: false, error: { reason: "rejected" } });
    expect(await transport.publish([])).toEqual([]);
  });

  it("checks its options", () => {
    const base = {
      token: "t",
      workerUrl: "https://app.example/v1/worker",
      currentSigningKey: "a",
      nextSigningKey: "b",
    };
    expect(() => new QStashTransport({ ...base, token: "" })).toThrow(RangeError);
    expect(() => new QStashTransport({ ...base, nextSigningKey: "" })).toThrow(RangeError);
    expect(() => new QStashTransport({ ...base, workerUrl: "nope" })).toThrow(TypeError);
    expect(() => new QStashTransport({ ...base, flowControl: { x: {} } })).toThrow(RangeError);
    expect(() => new QStashTransport({ ...base, batchSize: 0 })).toThrow(RangeError);
    // A publish timeout past Node's timer limit failed every publish after 1 ms ("gave no answer
    // within Infinity ms"); an infinite response grace made every Upstash-Timeout "Infinity".
    for (const publishTimeoutMs of [Number.POSITIVE_INFINITY, 2 ** 31, 1e300]) {
      expect(() => new QStashTransport({ ...base, publishTimeoutMs })).toThrow(/publishTimeoutMs/);
    }
    for (const responseGraceMs of [Number.POSITIVE_INFINITY, 1e300, Number.NaN, -1]) {
      expect(() => new QStashTransport({ ...base, responseGraceMs })).toThrow(/responseGraceMs/);
    }
    expect(
      new QStashTransport({ ...base, workerUrl: "HTTPS://App.Example/v1/worker" }).workerUrl,
    ).toBe("https://app.example/v1/worker");
  });
});

describe("nodeQStashHttp", () => {
  it("sends the request the SDK's client sends: path, headers that matter, body", async () => {
    const answer = JSON.stringify([{ messageId: "msg_1" }, { messageId: "msg_2" }]);
    const queue = await startEndpoint({ "/v2/batch": () => ({ status: 200, body: answer }) });
    cleanups.push(() => queue.close());
    const messages = [message({ notBefore: Date.now() + 60_000 }), message()];
    const requests = [];
    for (const http of [undefined, nodeQStashHttp()]) {
      const transport = new QStashTransport({
        token: "token",
        baseUrl: queue.base,
        workerUrl: "http://127.0.0.1:9/v1/worker",
        failureCallbackUrl: "http://127.0.0.1:9/v1/dead",
        currentSigningKey: "current",
        nextSigningKey: "next",
        ...(http ? { http } : {}),
      });
      const outcomes = await transport.publish(messages);
      expect(okIds(outcomes)).toEqual(["msg_1", "msg_2"]);
      const [hit] = queue.hits.splice(0);
      const { method, path, body, headers } = hit!;
      const named = ["authorization", "content-type", "content-length"].map((h) => headers.get(h));
      requests.push({ method, path, body, named });
    }
    expect(requests[1]).toEqual(requests[0]);
    expect(requests[0]!.named[0]).toMatch(/^Bearer ./);
  });

  it("an answer that is not 2xx fails the batch with its status and body", async () => {
    const queue = await startEndpoint({
      "/v2/batch": () => ({ status: 429, body: "too many requests" }),
    });
    cleanups.push(() => queue.close());
    sender = nodeQStashHttp();
    const { transport } = await setup({}, { baseUrl: queue.base });
    const [outcome] = await transport.publish([message()]);
    expect(outcome).toMatchObject({ ok: false, error: { reason: "request", status: 429 } });
    expect(!outcome!.ok && outcome!.error.message).toContain("too many requests");
  });

  it("aborts a request that outlives publishTimeoutMs (the connection is closed)", async () => {
    const queue = await startEndpoint({ "/v2/batch": () => ({ status: 200, hang: true }) });
    cleanups.push(() => queue.close());
    sender = nodeQStashHttp();
    // Long enough for the request to reach the endpoint first on a busy machine.
    const { transport } = await setup({}, { baseUrl: queue.base, publishTimeoutMs: 1_000 });
    const [outcome] = await transport.publish([message()]);
    expect(outcome).toMatchObject({ ok: false, error: { reason: "timeout" } });
    await until(() => queue.aborted() === 1);
  });
});

describe("QStashTransport.verify", () => {
  it("accepts the double's signature for the right URL and rejects a wrong one", async () => {
    const { endpoint, qstash, transport, workerUrl } = await setup({ "/v1/worker": ok });
    await transport.publish([message()]);
    await qstash.idle();
    const hit = endpoint.at("/v1/worker")[0]!;
    expect(await transport.verify(asDelivery(hit, workerUrl))).toBe(true);
    expect(await transport.verify(asDelivery(hit, `${endpoint.base}/v1/other`))).toBe(false);
    expect(await transport.verify({ ...asDelivery(hit, workerUrl), body: `${hit.body} ` })).toBe(
      false,
    );
    expect(await transport.verify({ url: workerUrl, headers: new Headers(), body: hit.body })).toBe(
      false,
    );
    const garbage = new Headers({ "upstash-signature": "not.a.jwt" });
    expect(await transport.verify({ url: workerUrl, headers: garbage, body: hit.body })).toBe(
      false,
    );
  });

  it("accepts signatures under the next key (rotation)", async () => {
    const { endpoint, qstash, transport, workerUrl } = await setup({ "/v1/worker": ok });
    qstash.signWith = "next";
    await transport.publish([message()]);
    await qstash.idle();
    const hit = endpoint.at("/v1/worker")[0]!;
    expect(await transport.verify(asDelivery(hit, workerUrl))).toBe(true);
    const other = new QStashTransport({
      token: "t",
      workerUrl,
      currentSigningKey: qstash.currentSigningKey,
      nextSigningKey: "sig_someone_else",
    });
    expect(await other.verify(asDelivery(hit, workerUrl))).toBe(false);
  });
});
