/**
 * `config.retention` reaches the store `tickwork start` opens: with `maxFinishedJobs: 2`, a server
 * on a real Redis keeps the two newest of four finished jobs, and the others are gone.
 */
import { randomBytes } from "node:crypto";
import { afterEach, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/adapter/node/start.ts";
import { defineConfig } from "../../src/config/index.ts";
import { silentLogger } from "../../src/engine/index.ts";
import { call } from "../http/harness.ts";

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

it("keeps at most maxFinishedJobs finished jobs when the configuration says so", async () => {
  server = await startServer({
    handlers: { echo: { run: (input: unknown) => input } },
    dev: true,
    port: 0,
    signals: false,
    print: false,
    redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    prefix: `tw-retention-${randomBytes(6).toString("hex")}`,
    config: defineConfig({ retention: { maxFinishedJobs: 2 } }),
    engine: { logger: silentLogger },
  });
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    const submitted = await call(server.url, "POST", "/v1/jobs", {
      json: { handler: "echo", input: i },
    });
    expect(submitted.status).toBe(202);
    const id = submitted.body.id as string;
    // The long-poll answers once the job is final.
    const done = await call(server.url, "GET", `/v1/jobs/${id}?wait=10s`);
    expect(done.body).toMatchObject({ id, status: "succeeded" });
    ids.push(id);
  }
  const listed = await call(server.url, "GET", "/v1/jobs?limit=10");
  expect((listed.body.items as { id: string }[]).map((j) => j.id)).toEqual(ids.slice(2).reverse());
  for (const id of ids.slice(0, 2)) {
    expect((await call(server.url, "GET", `/v1/jobs/${id}`)).status).toBe(404);
  }
});
