/**
 * @module
 * `npx tsx bench/instructions.ts [outbox,streams,bullmq,drain-streams,drain-bullmq]`: instructions
 * Redis executes per submit or per delivery, counted by valgrind (callgrind) — a figure that,
 * unlike Redis's CPU time, does not move with other load on the machine. Each contender gets its
 * own `redis-server` under callgrind with instrumentation off. A submit contender makes 500
 * warm-up submits (4 concurrent loops), then instrumentation is switched on
 * (`callgrind_control -i on`) for `N` submits (env `N`, default 1,000), then off and dumped. A
 * drain contender submits `N` no-op jobs uninstrumented, then counts while a worker of
 * concurrency 50 runs them all (the end-to-end section's drain, `bench/sections/streams.ts`).
 *
 * - `outbox`: `engine.broker.submit` on `RedisStore` (the QStash path: the outbox), a transport
 *   that accepts every publish without a network (the publish costs Redis nothing until the tick).
 * - `streams`: the same on `RedisStore({ dispatch: "streams" })`.
 * - `bullmq`: BullMQ `queue.add`.
 * - `drain-streams`: a `PullWorker` on `RedisStreams` draining jobs submitted as `streams` does.
 * - `drain-bullmq`: a BullMQ `Worker` draining jobs added with `queue.add`.
 *
 * `REDIS_HASH_MAX_LISTPACK_VALUE=512` starts each `redis-server` with that setting (Redis's default
 * is 64: a hash holding a longer value, such as a job's, is a hash table).
 *
 * `KEEP=1` keeps the callgrind files (`callgrind_annotate <file>` shows where the instructions go).
 *
 * `CACHE_SIM=1` runs callgrind's cache simulation too (`--cache-sim=yes`, about twice as slow) and
 * prints the last-level cache misses of data per unit, and how many of them are writes: memory a
 * command touches that is not in the cache, which instructions do not count
 * (docs/benchmarks.md, "Redis time is not instructions").
 *
 * Needs `valgrind` and `redis-server` on the PATH (Debian: `apt-get install valgrind`). Not part
 * of `npm run bench`: under callgrind Redis runs some 50 times slower. Used for
 * docs/adr/0022-submit-cpu.md and docs/adr/0034-lua-per-delivery.md.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { createEngine, PullWorker, silentLogger } from "../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../src/store/redis/index.ts";
import type { Transport } from "../src/transport/port.ts";
import { inLoops } from "./lib/loops.ts";
import { BENCH_DEGRADATION } from "./lib/settings.ts";

const N = Number(process.env.N ?? 1_000);
const CACHE_SIM = process.env.CACHE_SIM === "1";
const WARMUP = 500;
const which = (process.argv[2] ?? "outbox,streams,bullmq").split(",");
const dir = mkdtempSync(join(tmpdir(), "tickwork-callgrind-"));

/** The connections a contender opened: closed before its server stops. */
const opened: Redis[] = [];
function connect(url: string, options: { maxRetriesPerRequest?: null } = {}): Redis {
  const redis = new Redis(url, options);
  opened.push(redis);
  return redis;
}

/** Accepts every message, no network. */
const acceptAll = {
  name: "accept-all",
  publish: async (messages: { id: string }[]) => messages.map((m) => ({ id: m.id, ok: true })),
} as unknown as Transport;

/**
 * Runs `work` against a `redis-server` under callgrind; `work` switches counting on and off with
 * the functions it is given and answers how many units (submits, jobs) it counted over.
 */
async function underCallgrind(
  name: string,
  port: number,
  unit: string,
  work: (url: string, count: { on(): void; off(): void }) => Promise<number>,
): Promise<void> {
  const child = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      "--instr-atstart=no",
      ...(CACHE_SIM ? ["--cache-sim=yes"] : []),
      `--callgrind-out-file=${dir}/${name}.%p`,
      "redis-server",
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      // Redis's own default unless set: hashes keep the compact encoding up to this value size.
      "--hash-max-listpack-value",
      process.env.REDIS_HASH_MAX_LISTPACK_VALUE ?? "64",
      "--appendonly",
      "no",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("Ready to accept")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`redis-server under valgrind exited (${code})`)));
  });
  const pid = String(child.pid);
  const units = await work(`redis://127.0.0.1:${port}`, {
    on: () => execFileSync("callgrind_control", ["-i", "on", pid], { stdio: "ignore" }),
    off: () => {
      execFileSync("callgrind_control", ["-i", "off", pid], { stdio: "ignore" });
      execFileSync("callgrind_control", ["-d", pid], { stdio: "ignore" });
    },
  });
  for (const redis of opened.splice(0)) redis.disconnect();
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("exit", resolve));
  const sums = new Map<string, number>();
  for (const file of readdirSync(dir).filter((f) => f.startsWith(`${name}.`))) {
    const text = readFileSync(join(dir, file), "utf8");
    const events = /^events: (.+)$/m.exec(text)?.[1]?.trim().split(/\s+/) ?? [];
    const totals = /^totals: (.+)$/m.exec(text)?.[1]?.trim().split(/\s+/) ?? [];
    for (const [i, event] of events.entries()) {
      sums.set(event, (sums.get(event) ?? 0) + Number(totals[i] ?? 0));
    }
  }
  const per = (event: string) => Math.round((sums.get(event) ?? 0) / units);
  const misses = CACHE_SIM
    ? `, ${Math.round(((sums.get("DLmr") ?? 0) + (sums.get("DLmw") ?? 0)) / units)} last-level data misses (${per("DLmw")} writes)`
    : "";
  console.log(`${name.padEnd(13)} ${per("Ir")} instructions${misses} per ${unit}`);
}

/** Counts `N` submits after the warm-up. */
function measure(
  name: string,
  port: number,
  setup: (url: string) => (i: number) => Promise<unknown>,
): Promise<void> {
  return underCallgrind(name, port, "submit", async (url, count) => {
    const submit = setup(url);
    await inLoops(WARMUP, 4, submit);
    count.on();
    await inLoops(N, 4, submit, WARMUP);
    count.off();
    return N;
  });
}

/** The engine the submit and drain contenders share, on `RedisStore` at `url`. */
function benchEngine(url: string, streams: boolean) {
  const redis = connect(url);
  const store = new RedisStore({
    client: fromIoredis(redis),
    prefix: "bench",
    ...(streams ? { dispatch: "streams" as const } : {}),
  });
  const transport = streams ? new RedisStreams({ redis, prefix: "bench" }) : acceptAll;
  const engine = createEngine({
    store,
    transport,
    handlers: { noop: { run: async () => null } },
    degradation: BENCH_DEGRADATION,
    logger: silentLogger,
  });
  return { engine, transport };
}

/** Counts the drain of `N` jobs, submitted uncounted, by a worker of concurrency 50. */
function measureDrain(name: string, port: number, bullmq: boolean): Promise<void> {
  return underCallgrind(name, port, "job", async (url, count) => {
    if (bullmq) {
      const connection = { connection: connect(url, { maxRetriesPerRequest: null }) };
      const queue = new Queue("bench", connection);
      for (let i = 0; i < N; i += 100) {
        const jobs = Array.from({ length: Math.min(100, N - i) }, (_, k) => ({
          name: "noop",
          data: { n: i + k },
        }));
        await queue.addBulk(jobs);
      }
      count.on();
      const worker = new Worker("bench", async () => null, {
        connection: connect(url, { maxRetriesPerRequest: null }),
        concurrency: 50,
      });
      await new Promise<void>((resolve) => {
        let done = 0;
        worker.on("completed", () => {
          if (++done === N) resolve();
        });
      });
      count.off();
      await worker.close();
      await queue.close();
      return N;
    }
    const { engine, transport } = benchEngine(url, true);
    await inLoops(N, 4, (n) => engine.broker.submit({ handler: "noop", input: { n } }));
    const worker = new PullWorker({
      runner: engine.runner,
      queue: transport as RedisStreams,
      concurrency: 50,
      logger: silentLogger,
    });
    // The queue's first script call loads its function library: before counting.
    await (transport as RedisStreams).stats();
    count.on();
    await worker.start();
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (worker.stats().acked < N) return;
        clearInterval(check);
        resolve();
      }, 10);
    });
    count.off();
    await worker.stop();
    await (transport as RedisStreams).close();
    return N;
  });
}

let port = 16_400 + (process.pid % 500);
for (const name of which) {
  port++;
  if (name === "bullmq") {
    await measure(name, port, (url) => {
      const queue = new Queue("bench", { connection: connect(url) });
      return (i) => queue.add("noop", { n: i });
    });
  } else if (name === "outbox" || name === "streams") {
    await measure(name, port, (url) => {
      const { engine } = benchEngine(url, name === "streams");
      return (i) => engine.broker.submit({ handler: "noop", input: { n: i } });
    });
  } else if (name === "drain-streams" || name === "drain-bullmq") {
    await measureDrain(name, port, name === "drain-bullmq");
  } else {
    throw new Error(
      `unknown contender ${name}: outbox | streams | bullmq | drain-streams | drain-bullmq`,
    );
  }
}
// KEEP=1 keeps the callgrind files for `callgrind_annotate` (where the instructions go).
if (process.env.KEEP === "1") console.log(`callgrind files kept in ${dir}`);
else rmSync(dir, { recursive: true, force: true });
process.exit(0);
