/**
 * The local transport's deliveries: QStash's headers and signature (and their rotation), delivery
 * in-process through `deliver`, not-before times (a far-future one too), the dedup window and its
 * cap, message ids, and bad messages. Retries are in `local-transport-retries.test.ts`, limits and
 * shutdown in `local-transport-lifecycle.test.ts`; the shared worker and helpers in
 * `test/support/local-transport.ts`.
 */
import { describe, expect, it, vi } from "vitest";
import {
  expectStartAt,
  header,
  inProcessWorker,
  message,
  nextSigningKey,
  ok,
  receiver,
  startServer,
  transport,
  useFakeClock,
} from "../../../test/support/local-transport.ts";
import type { LocalTransport } from "./index.ts";

describe("LocalTransport delivery", () => {
  it("POSTs the job with QStash's headers and a signature the Receiver accepts", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const url = `${server.base}/v1/worker`;
    const t = transport({ workerUrl: url });
    const msg = message();

    const [outcome] = await t.publish([msg]);
    expect(outcome).toEqual({
      id: msg.id,
      ok: true,
      messageId: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
      deduplicated: false,
    });
    await t.idle();

    expect(server.received).toHaveLength(1);
    const got = server.received[0]!;
    expect(got.method).toBe("POST");
    expect(got.body).toBe(JSON.stringify(msg.job));
    expect(header(got, "content-type")).toBe("application/json");
    expect(header(got, "upstash-message-id")).toBe(outcome!.ok && outcome!.messageId);
    expect(header(got, "upstash-retried")).toBe("0");
    const signature = header(got, "upstash-signature");
    await expect(receiver.verify({ signature, body: got.body, url })).resolves.toBe(true);

    const headers = new Headers({ "upstash-signature": signature });
    expect(await t.verify({ url, headers, body: got.body })).toBe(true);
    expect(await t.verify({ url, headers, body: `${got.body} ` })).toBe(false);
    expect(await t.verify({ url: `${server.base}/other`, headers, body: got.body })).toBe(false);
    expect(await t.verify({ url, headers: new Headers(), body: got.body })).toBe(false);

    expect(t.stats()).toEqual({
      published: 1,
      deduplicated: 0,
      delivered: 1,
      retried: 0,
      failed: 0,
      callbacksDelivered: 0,
      callbacksFailed: 0,
      pending: 0,
      inFlight: 0,
      dedupIds: 1,
      dedupEvictedEarly: 0,
    });
  });

  it("delivers in-process through `deliver`, where verify() accepts request.url", async () => {
    const verified: boolean[] = [];
    const t: LocalTransport = transport({
      workerUrl: "http://Worker.local:80/v1/worker",
      deliver: async (request) => {
        const body = await request.text();
        verified.push(await t.verify({ url: request.url, headers: request.headers, body }));
        return new Response(null, { status: 204 });
      },
    });
    await t.publish([message()]);
    await t.idle();
    expect(verified).toEqual([true]);
    expect(t.stats().delivered).toBe(1);
  });

  it("accepts signatures under the next key (rotation)", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const url = `${server.base}/v1/worker`;
    const signer = transport({ workerUrl: url, signingKey: nextSigningKey });
    await signer.publish([message()]);
    await signer.idle();
    const got = server.received[0]!;
    const verifier = transport({ workerUrl: url });
    const headers = new Headers({ "upstash-signature": header(got, "upstash-signature") });
    expect(await verifier.verify({ url, headers, body: got.body })).toBe(true);
    const noRotation = transport({ workerUrl: url, nextSigningKey: undefined });
    expect(await noRotation.verify({ url, headers, body: got.body })).toBe(false);
  });

  it("does not deliver before notBefore", async () => {
    useFakeClock();
    const worker = inProcessWorker({ "/v1/worker": ok });
    const t = transport({ workerUrl: `${worker.base}/v1/worker`, deliver: worker.deliver });
    const publishedAt = Date.now();
    const later = message({ notBefore: publishedAt + 150 });
    const now = message({ notBefore: publishedAt - 1000 });
    await t.publish([later, now]);
    await vi.advanceTimersByTimeAsync(0);
    await worker.arrived(1);
    // Held until its notBefore, 150 ms after the publish (the clock has not moved since).
    await expectStartAt(t, worker, 150);
    await t.idle();

    expect(worker.received.map((r) => JSON.parse(r.body).id)).toEqual([now.id, later.id]);
  });

  it("holds a far-future message instead of firing it (timer overflow)", async () => {
    // Fake timers fire a delay over 2^31 - 1 ms after 1 ms, as Node's do.
    useFakeClock();
    const worker = inProcessWorker({ "/v1/worker": ok });
    const t = transport({ workerUrl: `${worker.base}/v1/worker`, deliver: worker.deliver });
    await t.publish([message({ notBefore: Date.now() + 30 * 86_400_000 })]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(worker.received).toHaveLength(0);
    expect(t.stats()).toMatchObject({ pending: 1, inFlight: 0 });
  });

  it("deduplicates by dedupId within the window", async () => {
    const server = await startServer({ "/v1/worker": ok });
    let now = Date.now();
    const t = transport({
      workerUrl: `${server.base}/v1/worker`,
      dedupWindowMs: 200,
      now: () => now,
    });
    const first = message({ dedupId: "sched-1@1000" });
    const [a, b] = await t.publish([first, message({ dedupId: "sched-1@1000" })]);
    const [c] = await t.publish([message({ dedupId: "sched-1@1000" })]);
    const [other] = await t.publish([message({ dedupId: "sched-1@2000" })]);
    await t.idle();

    expect(a).toMatchObject({ ok: true, deduplicated: false });
    const firstId = a!.ok ? a!.messageId : "";
    expect(b).toMatchObject({ ok: true, deduplicated: true, messageId: firstId });
    expect(c).toMatchObject({ ok: true, deduplicated: true, messageId: firstId });
    expect(other).toMatchObject({ ok: true, deduplicated: false });
    // Delivered concurrently, so they may arrive in either order.
    expect(server.received.map((r) => JSON.parse(r.body).id).sort()).toEqual(
      [first.id, other!.id].sort(),
    );
    expect(t.stats()).toMatchObject({ published: 2, deduplicated: 2, delivered: 2 });

    now += 200; // the window is over
    const [afterWindow] = await t.publish([message({ dedupId: "sched-1@1000" })]);
    expect(afterWindow).toMatchObject({ ok: true, deduplicated: false });
    expect(afterWindow!.ok && afterWindow!.messageId).not.toBe(firstId);
    await t.idle();
    expect(server.received).toHaveLength(3);
  });

  it("past dedupMaxEntries forgets the oldest dedup id early (a duplicate of it gets through)", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const t = transport({ workerUrl: `${server.base}/v1/worker`, dedupMaxEntries: 2 });
    await t.publish([message({ dedupId: "d1" }), message({ dedupId: "d2" })]);
    expect(t.stats()).toMatchObject({ dedupIds: 2, dedupEvictedEarly: 0 });
    await t.publish([message({ dedupId: "d3" })]);
    const [d1, d3] = await t.publish([message({ dedupId: "d1" }), message({ dedupId: "d3" })]);
    await t.idle();
    expect(d1).toMatchObject({ ok: true, deduplicated: false });
    expect(d3).toMatchObject({ ok: true, deduplicated: true });
    expect(server.received).toHaveLength(4);
    expect(t.stats()).toMatchObject({ dedupIds: 2, dedupEvictedEarly: 2, deduplicated: 1 });
  });

  it("gives every message its own id and forgets dedup ids after the window", async () => {
    let now = 1_000_000;
    const t = transport({
      workerUrl: "http://worker.local/v1/worker",
      deliver: () => new Response(null, { status: 204 }),
      dedupWindowMs: 1_000,
      now: () => now,
    });
    const outcomes = await t.publish(Array.from({ length: 50 }, () => message()));
    const ids = outcomes.map((o) => (o.ok ? o.messageId : ""));
    expect(new Set(ids).size).toBe(50);
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    await t.idle();
    expect(t.stats()).toMatchObject({ delivered: 50, dedupIds: 50 });
    now += 1_000;
    await t.publish([message()]);
    expect(t.stats()).toMatchObject({ dedupIds: 1 });
    await t.close();
    expect(t.stats()).toMatchObject({ dedupIds: 0 });
  });

  it("answers each bad message with ok: false and still accepts the rest", async () => {
    const server = await startServer({ "/v1/worker": ok });
    const t = transport({ workerUrl: `${server.base}/v1/worker` });
    const bad = message({ retries: -1 });
    const good = message();
    const [badOutcome, goodOutcome] = await t.publish([bad, good]);
    expect(badOutcome).toMatchObject({ id: bad.id, ok: false, error: expect.any(RangeError) });
    expect(goodOutcome).toMatchObject({ id: good.id, ok: true });
    await t.idle();
    expect(server.received).toHaveLength(1);
  });
});
