/**
 * Replayed deliveries change nothing. Real deliveries — from the local queue and from the QStash
 * double, each signed with a fresh token — are captured on their way into the app and sent again:
 * unchanged, with `Upstash-Retried` raised, after the job succeeded, while it waits for a retry,
 * and after its dead letter was deleted. No handler runs again and no status changes; a deleted
 * dead letter stays deleted even when a freshly signed delivery of it arrives.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NonRetryableError, RetryAfterError } from "../../src/core/errors.ts";
import { createEngine, type Engine, type Handlers, silentLogger } from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import { LocalTransport } from "../../src/transport/local/index.ts";
import type { Transport } from "../../src/transport/port.ts";
import { QStashTransport } from "../../src/transport/qstash/index.ts";
import { signDelivery } from "../../src/transport/signing.ts";
import { until } from "../http/harness.ts";
import {
  type QStashDouble,
  signQStashJwt,
  startQStashDouble,
} from "../support/qstash-double/index.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";

const LOCAL_KEY = "replay-local-signing-key";

interface Captured {
  url: string;
  headers: [string, string][];
  body: string;
}

type Kind = "local" | "qstash";

describe.each(storeFactories)("replayed deliveries on $name", (factory) => {
  describe.each<Kind>(["local", "qstash"])("through the %s queue", (kind) => {
    let handle: StoreHandle;
    let server: Server;
    let origin: string;
    let engine: Engine;
    let qstash: QStashDouble | undefined;
    let local: LocalTransport | undefined;
    const captured: Captured[] = [];
    const runs: string[] = [];

    const handlers: Handlers = {
      echo: {
        run: (input, ctx) => {
          runs.push(ctx.jobId);
          return input;
        },
      },
      later: {
        run: (_input, ctx) => {
          runs.push(ctx.jobId);
          throw new RetryAfterError("come back in a minute", 60_000);
        },
      },
      refuse: {
        run: (_input, ctx) => {
          runs.push(ctx.jobId);
          throw new NonRetryableError("never");
        },
      },
    };

    beforeEach(async () => {
      captured.length = 0;
      runs.length = 0;
      handle = await factory.make();
      let app: { fetch(request: Request): Response | Promise<Response> } | undefined;
      server = serve({
        fetch: async (request) => {
          const path = new URL(request.url).pathname;
          if (path === "/v1/worker" || path === "/v1/dead") {
            captured.push({
              url: path,
              headers: [...request.headers],
              body: await request.clone().text(),
            });
          }
          return app?.fetch(request) ?? new Response(null, { status: 503 });
        },
        port: 0,
        hostname: "127.0.0.1",
      }) as Server;
      if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      let transport: Transport;
      if (kind === "qstash") {
        // Unscaled: the "later" handler's Retry-After (60 s) must keep its retry away.
        qstash = await startQStashDouble({ backoffScale: 1 });
        transport = new QStashTransport({
          token: qstash.token,
          baseUrl: qstash.url,
          workerUrl: `${origin}/v1/worker`,
          failureCallbackUrl: `${origin}/v1/dead`,
          currentSigningKey: qstash.currentSigningKey,
          nextSigningKey: qstash.nextSigningKey,
          retry: false,
        });
      } else {
        local = new LocalTransport({
          workerUrl: `${origin}/v1/worker`,
          failureCallbackUrl: `${origin}/v1/dead`,
          signingKey: LOCAL_KEY,
          backoff: () => 30,
          onError: () => {},
        });
        transport = local;
      }
      engine = createEngine({
        store: handle.store,
        transport,
        handlers,
        logger: silentLogger,
        leaseGraceMs: 100,
      });
      app = createApp({ engine, dev: true });
    });

    afterEach(async () => {
      await local?.close();
      await qstash?.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await handle.cleanup();
    });

    /** Send a captured request again, with some headers changed. */
    async function resend(request: Captured, change: Record<string, string> = {}) {
      const headers = new Headers(request.headers);
      for (const [name, value] of Object.entries(change)) headers.set(name, value);
      headers.delete("content-length");
      const res = await fetch(`${origin}${request.url}`, {
        method: "POST",
        headers,
        body: request.body,
      });
      return { status: res.status, body: await res.text() };
    }

    /** The same body under a freshly signed token: what a late, legitimate delivery looks like. */
    async function resigned(request: Captured): Promise<Captured> {
      const url = `${origin}${request.url}`;
      const signature =
        kind === "qstash"
          ? signQStashJwt({
              signingKey: qstash!.currentSigningKey,
              url,
              body: new TextEncoder().encode(request.body),
            })
          : await signDelivery({ signingKey: LOCAL_KEY, url, body: request.body });
      const headers = new Headers(request.headers);
      headers.set("upstash-signature", signature);
      return { ...request, headers: [...headers] };
    }

    const jobFor = (id: string) =>
      captured.filter((c) => c.url === "/v1/worker" && c.body.includes(id));

    it("after success: unchanged or with Upstash-Retried raised, nothing runs again", async () => {
      const { job } = await engine.broker.submit({ handler: "echo", input: { n: 1 } });
      await until(async () => (await handle.store.getJob(job.id))?.status === "succeeded");
      const deliveries = jobFor(job.id);
      expect(deliveries.length).toBeGreaterThan(0);
      const before = JSON.stringify(await handle.store.getJob(job.id));
      const stats = (await engine.stats()).totals;
      for (const delivery of deliveries) {
        for (const change of [{}, { "upstash-retried": "999" }]) {
          const answer = await resend(delivery, change);
          expect(answer.status).toBe(200);
          expect(answer.body).toContain("replayed");
        }
      }
      expect(runs).toEqual([job.id]);
      expect(JSON.stringify(await handle.store.getJob(job.id))).toBe(before);
      expect((await engine.stats()).totals).toEqual(stats);
    });

    it("while waiting for its retry: a replay with Upstash-Retried 999 neither runs nor kills it", async () => {
      const { job } = await engine.broker.submit({ handler: "later", retries: 3 });
      await until(async () => (await handle.store.getJob(job.id))?.status === "failed");
      const [delivery] = jobFor(job.id);
      expect(delivery).toBeDefined();
      for (const change of [{}, { "upstash-retried": "999" }, { "upstash-retried": "3" }]) {
        const answer = await resend(delivery!, change);
        expect(answer.status).toBe(200);
        expect(answer.body).toContain("replayed");
      }
      const after = await handle.store.getJob(job.id);
      expect(after).toMatchObject({ status: "failed", attempts: 1 });
      expect(runs).toEqual([job.id]);
    });

    it("after its dead letter was deleted: replays and freshly signed deliveries bring nothing back", async () => {
      // A job, and an occurrence (which a delivery would otherwise create), both refused for good.
      const { job } = await engine.broker.submit({ handler: "refuse" });
      await engine.broker.createSchedule({ id: "nightly", handler: "refuse", schedule: "1s" });
      let occurrence: string | undefined;
      await until(async () => {
        await engine.ticker.tick();
        const dead = (await engine.broker.listDead({ limit: 10 })).items;
        occurrence ??= dead.find((d) => d.scheduleId === "nightly")?.id;
        return occurrence !== undefined && dead.some((d) => d.id === job.id);
      }, 15_000);
      await engine.broker.deleteSchedule("nightly");
      // The queue's failure callbacks (one per refused delivery) arrive after the 489s.
      await until(() => captured.filter((c) => c.url === "/v1/dead").length >= 2);
      for (const id of [job.id, occurrence!]) {
        await engine.broker.deleteDead(id);
        expect(await handle.store.getJob(id)).toBeNull();
      }
      // Only these two: the schedule's later occurrences, fired ahead of their time by the ticks
      // above (its look-ahead), still run after it is deleted, as fired jobs do.
      const replayed = (id: string) => id === job.id || id === occurrence;
      const ran = runs.filter(replayed).length;
      const requests = captured.filter(
        (c) => c.body.includes(job.id) || c.body.includes(occurrence!) || c.url === "/v1/dead",
      );
      expect(requests.some((r) => r.url === "/v1/dead")).toBe(true);
      for (const request of requests) {
        for (const replay of [request, await resigned(request)]) {
          const answer = await resend(replay);
          expect(answer.status, `${request.url} ${answer.body}`).toBeLessThan(300);
        }
      }
      expect(runs.filter(replayed).length).toBe(ran);
      expect(await handle.store.getJob(job.id)).toBeNull();
      expect(await handle.store.getJob(occurrence!)).toBeNull();
      expect(
        (await engine.broker.listDead({ limit: 10 })).items.filter((d) => replayed(d.id)),
      ).toEqual([]);
    });
  });
});
