/**
 * `POST /v1/hooks/:name` over a real socket, end to end through the local queue: for each sender,
 * a delivery signed by its own SDK (or its published construction) becomes a job with the
 * expected input and runs; a changed byte, a wrong secret, an old timestamp and a missing
 * signature header are refused with 401 problem+json and store nothing (jobs, events and, on
 * Redis, keys counted before and after). On memory, Redis (ioredis) and `@upstash/redis`.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, expectProblem, type Harness, startHarness, until } from "../http/harness.ts";
import { makeRedisStore, type StoreHandle, storeFactories } from "../support/stores.ts";
import { footprint, recordingHandlers } from "./harness.ts";
import { allSenders, type Sender } from "./senders.ts";

const factories = [
  ...storeFactories.filter((f) => f.name !== "redis"),
  {
    name: "redis",
    make: async (): Promise<StoreHandle & { keys?: () => Promise<number> }> => {
      const handle = await makeRedisStore();
      // Every key but the webhook counters (a refusal is counted, and only counted).
      const keys = async () =>
        (await handle.redis.keys(`{${handle.prefix}}:*`)).filter((k) => !k.endsWith("}:hooks"))
          .length;
      return { ...handle, keys };
    },
  },
];

describe.each(factories)("webhook endpoints on $name", (factory) => {
  const senders = allSenders();
  let handle: StoreHandle & { keys?: () => Promise<number> };
  let h: Harness;
  let rec: ReturnType<typeof recordingHandlers>;

  beforeAll(async () => {
    handle = await factory.make();
    rec = recordingHandlers();
    h = await startHarness({
      store: handle.store,
      handlers: rec.handlers,
      app: {
        webhooks: Object.fromEntries(
          senders.map((s) => [
            s.scheme,
            {
              verifier: s.verifier,
              handler: "hook.receive",
              input: { headers: ["x-github-event", "x-shopify-topic", "x-absent"] },
            },
          ]),
        ),
      },
    });
  });

  afterAll(async () => {
    await h?.close();
    await handle?.cleanup();
  });

  const post = (sender: Sender, body: string | Uint8Array, headers: Record<string, string>) =>
    call(h.origin, "POST", `/v1/hooks/${sender.scheme}`, { body: body as BodyInit, headers });

  for (const sender of allSenders()) {
    const scheme = sender.scheme;
    const of = () => senders.find((s) => s.scheme === scheme)!;

    it(`${scheme}: a signed delivery is accepted (202), stored with the event and run`, async () => {
      const s = of();
      const eventId = `evt_${scheme}_${Math.random().toString(36).slice(2)}`;
      const body = s.body(eventId);
      const answer = await post(s, body, await s.sign(body, eventId));
      expect(answer.status, JSON.stringify(answer.body)).toBe(202);
      expect(answer.body).toEqual({ id: expect.stringMatching(/^j_/), status: "queued" });
      expect(answer.headers.get("location")).toBe(`/v1/jobs/${answer.body.id}`);
      expect(answer.headers.get("access-control-allow-origin")).toBeNull();
      const job = await h.engine.store.getJob(answer.body.id);
      // The event id: Stripe's and Slack's from the body, the others' from their id header. The
      // key: the id where the signature covers it, else the body's SHA-256.
      const expectedId = eventId;
      expect(job?.idempotencyKey).toBe(
        ["github", "shopify", "hmac"].includes(scheme)
          ? `hook:${scheme}:body-sha256:${createHash("sha256").update(body).digest("hex")}`
          : `hook:${scheme}:${expectedId}`,
      );
      expect(job?.input).toEqual({
        body: scheme === "hmac" ? body : JSON.parse(body),
        headers: {
          ...(scheme === "github" ? { "x-github-event": "pull_request" } : {}),
          ...(scheme === "shopify" ? { "x-shopify-topic": "orders/create" } : {}),
        },
        event: { id: expectedId, endpoint: scheme, scheme },
      });
      await until(
        async () => (await h.engine.store.getJob(answer.body.id))?.status === "succeeded",
      );
      const created = (await h.engine.store.events({ limit: 1_000, types: ["job.created"] }))
        .events;
      expect(created.find((e) => e.jobId === answer.body.id)?.webhook).toEqual({
        endpoint: scheme,
        eventId: expectedId,
      });
    });

    it(`${scheme}: a changed byte, a wrong secret, an old timestamp, a missing header → 401, nothing stored`, async () => {
      const s = of();
      const eventId = `evt_bad_${Math.random().toString(36).slice(2)}`;
      const body = s.body(eventId);
      const before = await footprint(h.engine.store, handle.keys);
      const changed = new TextEncoder().encode(body);
      changed[changed.length - 2]! ^= 1;
      const attempts: [string, Promise<Awaited<ReturnType<typeof post>>>][] = [
        ["changed byte", post(s, changed, await s.sign(body, eventId))],
        ["wrong secret", post(s, body, await s.sign(body, eventId, { secret: s.wrongSecret }))],
      ];
      const unsigned = await s.sign(body, eventId);
      delete unsigned[s.signatureHeader];
      attempts.push(["missing header", post(s, body, unsigned)]);
      if (s.timestamped) {
        const old = Math.floor(Date.now() / 1000) - 3_600;
        attempts.push(["old timestamp", post(s, body, await s.sign(body, eventId, { ts: old }))]);
      }
      for (const [what, pending] of attempts) {
        const answer = await pending;
        expectProblem(answer, 401);
        expect(answer.body.type, what).toMatch(/^urn:tickwork:problem:webhook_/);
        if (what === "old timestamp") expect(answer.body.type).toMatch(/stale_timestamp$/);
        if (what === "missing header") expect(answer.body.type).toMatch(/missing_signature$/);
      }
      expect(await footprint(h.engine.store, handle.keys)).toEqual(before);
    });
  }

  it("slack: a signed url_verification answers 200 with its challenge and stores nothing; forged, 401; to another sender, a job", async () => {
    const slack = senders.find((s) => s.scheme === "slack")!;
    const challenge = `3eZbrw1aBm2rZgRNFdxV${Math.random().toString(36).slice(2)}`;
    const body = JSON.stringify({ token: "legacy", challenge, type: "url_verification" });
    const before = await footprint(h.engine.store, handle.keys);
    const answer = await post(slack, body, await slack.sign(body, ""));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toEqual({ challenge });
    expect(await footprint(h.engine.store, handle.keys)).toEqual(before);
    const forged = await slack.sign(body, "", { secret: slack.wrongSecret });
    expectProblem(await post(slack, body, forged), 401);
    // The same shape from another sender is that sender's event: a job like any other.
    const github = senders.find((s) => s.scheme === "github")!;
    const other = await post(github, body, await github.sign(body, "d-url-verification"));
    expect(other.status, JSON.stringify(other.body)).toBe(202);
  });

  it("the same event three times, concurrently and in sequence: one job, run once", async () => {
    for (const s of senders) {
      const eventId = `evt_dup_${s.scheme}_${Math.random().toString(36).slice(2)}`;
      const body = s.body(eventId);
      // Each delivery signed afresh, as senders do on a retry (new timestamps).
      const concurrent = await Promise.all(
        [0, 1, 2].map(async () => post(s, body, await s.sign(body, eventId))),
      );
      const sequential = [];
      for (let i = 0; i < 3; i++) sequential.push(await post(s, body, await s.sign(body, eventId)));
      const answers = [...concurrent, ...sequential];
      const ids = new Set(answers.map((a) => a.body.id));
      expect(ids.size, s.scheme).toBe(1);
      expect(answers.every((a) => a.status === 202)).toBe(true);
      expect(answers.filter((a) => a.headers.get("idempotent-replayed") === "true")).toHaveLength(
        5,
      );
      const [id] = [...ids];
      await until(async () => (await h.engine.store.getJob(id))?.status === "succeeded");
      // Once more after it finished: still the same job, nothing runs again.
      const late = await post(s, body, await s.sign(body, eventId));
      expect(late.body.id).toBe(id);
      expect(late.headers.get("idempotent-replayed")).toBe("true");
      const runs = rec.runs.filter((r) => (r as { event: { id?: string } }).event.id === eventId);
      expect(runs, s.scheme).toHaveLength(1);
    }
  });
});
