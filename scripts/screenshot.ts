/**
 * @module
 * Writes `docs/dashboard.png`: a real server (memory store, the local queue delivering over HTTP)
 * with a few schedules, jobs that succeed, fail and die, and about half a minute of varying load,
 * shown by the dashboard in Debian's headless Chromium (`/usr/bin/chromium`; never a downloaded
 * browser). Every number in the picture was produced by running jobs, not typed in.
 *
 * Usage: `npx tsx scripts/screenshot.ts [out.png]`
 */
import { existsSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { chromium } from "playwright-core";
import { NonRetryableError } from "../src/core/errors.ts";
import { createEngine, defineHandlers, silentLogger } from "../src/engine/index.ts";
import { createApp } from "../src/http/index.ts";
import { MemoryStore } from "../src/store/memory/index.ts";
import { LocalTransport } from "../src/transport/local/index.ts";

const CHROMIUM = "/usr/bin/chromium";
const out = process.argv[2] ?? new URL("../docs/dashboard.png", import.meta.url).pathname;
/** How long load runs while the page samples it (once a second) before the picture is taken. */
const LOAD_MS = 58_000;

if (!existsSync(CHROMIUM)) {
  console.error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  process.exit(1);
}

// A small deterministic generator, so two runs draw similar pictures.
let seed = 7;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const handlers = defineHandlers({
  "email.send": { run: async () => sleep(20 + random() * 80).then(() => ({ sent: true })) },
  "reports.daily": { run: async () => sleep(300 + random() * 500).then(() => ({ rows: 1_204 })) },
  "inventory.sync": { run: async () => sleep(50 + random() * 200).then(() => ({ changed: 3 })) },
  "sessions.cleanup": { run: async () => ({ removed: 17 }) },
  "image.resize": {
    run: async () => {
      await sleep(100 + random() * 300);
      if (random() < 0.15) throw new Error("upstream 503 from the image service");
      return { width: 640 };
    },
  },
  "billing.charge": {
    run: () => {
      throw new NonRetryableError("card declined: insufficient funds (cus_8XkQ)");
    },
  },
  "webhooks.deliver": {
    run: () => {
      throw new Error("connect ETIMEDOUT 203.0.113.9:443");
    },
  },
});

let handler: (request: Request) => Response | Promise<Response> = () =>
  new Response(null, { status: 503 });
const server = serve({ fetch: (r) => handler(r), port: 0, hostname: "127.0.0.1" }) as Server;
if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const transport = new LocalTransport({
  workerUrl: `${origin}/v1/worker`,
  failureCallbackUrl: `${origin}/v1/dead`,
  signingKey: "sig_screenshot",
  backoff: (retried) => 200 * 2 ** retried,
  parallelism: 6, // few workers, so bursts queue up
  onError: () => {},
});
const engine = createEngine({
  store: new MemoryStore(),
  transport,
  handlers,
  logger: silentLogger,
  instanceId: "web-7f3c",
  tick: { horizonMs: 1_000 },
});
const app = createApp({ engine, dev: true });
handler = (request) => app.fetch(request);

const post = (path: string, body: unknown) =>
  fetch(`${origin}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

for (const schedule of [
  { id: "daily-report", handler: "reports.daily", schedule: "0 9 * * *", tz: "Europe/Berlin" },
  { id: "sync-inventory", handler: "inventory.sync", schedule: "5s" },
  { id: "cleanup-sessions", handler: "sessions.cleanup", schedule: "*/15 * * * *" },
  { id: "weekly-digest", handler: "email.send", schedule: "0 8 * * MON", tz: "America/New_York" },
  { id: "retry-invoices", handler: "billing.charge", schedule: "1h" },
]) {
  await post("/v1/schedules", schedule);
}
await post("/v1/schedules/weekly-digest/pause", {});
await post("/v1/jobs", { handler: "billing.charge", input: { invoice: "in_1042" }, retries: 0 });
await post("/v1/jobs", { handler: "webhooks.deliver", input: { event: "order.paid" }, retries: 2 });

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({
    viewport: { width: 1280, height: 900 },
    colorScheme: "light",
  });
  await page.goto(`${origin}/dashboard?refresh=1`);

  // Load in waves: bursts make a backlog the workers then drain.
  const ticker = setInterval(() => void engine.ticker.tick(), 1_000);
  const started = Date.now();
  while (Date.now() - started < LOAD_MS) {
    const phase = ((Date.now() - started) / LOAD_MS) * Math.PI * 2.5; // ends on a peak
    const burst = Math.round(4 + 10 * Math.max(0, Math.sin(phase)) + random() * 3);
    await Promise.all(
      Array.from({ length: burst }, () => {
        const pick = random();
        return pick < 0.55
          ? post("/v1/jobs", { handler: "email.send", input: { to: "ada@example.com" } })
          : pick < 0.85
            ? post("/v1/jobs", { handler: "image.resize", input: { id: "img_77" }, retries: 1 })
            : post("/v1/jobs", { handler: "reports.daily", input: { type: "sales" } });
      }),
    );
    await sleep(700);
  }
  // Taken under load, so the numbers and charts are live ones.
  await page.getByRole("row", { name: /daily-report/ }).waitFor();
  await page.screenshot({ path: out, fullPage: true });
  clearInterval(ticker);
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  await transport.close();
  server.closeAllConnections();
  server.close();
}
