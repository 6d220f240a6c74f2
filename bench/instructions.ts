/**
 * @module
 * `npx tsx bench/instructions.ts [outbox,streams,bullmq]`: instructions Redis executes per submit,
 * counted by valgrind (callgrind) — a figure that, unlike Redis's CPU time, does not move with
 * other load on the machine. Each contender gets its own `redis-server` under callgrind with
 * instrumentation off; after 500 warm-up submits (4 concurrent loops) it is switched on
 * (`callgrind_control -i on`) for `N` submits (env `N`, default 1,000), then off and dumped.
 *
 * - `outbox`: `engine.broker.submit` on `RedisStore` (the QStash path: the outbox), a transport
 *   that accepts every publish without a network (the publish costs Redis nothing until the tick).
 * - `streams`: the same on `RedisStore({ dispatch: "streams" })`.
 * - `bullmq`: BullMQ `queue.add`.
 *
 * `KEEP=1` keeps the callgrind files (`callgrind_annotate <file>` shows where the instructions go).
 *
 * Needs `valgrind` and `redis-server` on the PATH (Debian: `apt-get install valgrind`). Not part
 * of `npm run bench`: under callgrind Redis runs some 50 times slower. Used for
 * docs/adr/0022-submit-cpu.md.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { createEngine, silentLogger } from "../src/engine/index.ts";
import { fromIoredis, RedisStore } from "../src/store/redis/index.ts";
import type { Transport } from "../src/transport/port.ts";
import { BENCH_DEGRADATION } from "./lib/settings.ts";

const N = Number(process.env.N ?? 1_000);
const WARMUP = 500;
const which = (process.argv[2] ?? "outbox,streams,bullmq").split(",");
const dir = mkdtempSync(join(tmpdir(), "tickwork-callgrind-"));

/** Accepts every message, no network. */
const acceptAll = {
  name: "accept-all",
  publish: async (messages: { id: string }[]) => messages.map((m) => ({ id: m.id, ok: true })),
} as unknown as Transport;

async function measure(
  name: string,
  port: number,
  setup: (url: string) => (i: number) => Promise<unknown>,
): Promise<void> {
  const child = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      "--instr-atstart=no",
      `--callgrind-out-file=${dir}/${name}.%p`,
      "redis-server",
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
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
  const submit = setup(`redis://127.0.0.1:${port}`);
  const loops = async (from: number, count: number) => {
    let next = from;
    const end = from + count;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < end) await submit(next++);
      }),
    );
  };
  await loops(0, WARMUP);
  const pid = String(child.pid);
  execFileSync("callgrind_control", ["-i", "on", pid], { stdio: "ignore" });
  await loops(WARMUP, N);
  execFileSync("callgrind_control", ["-i", "off", pid], { stdio: "ignore" });
  execFileSync("callgrind_control", ["-d", pid], { stdio: "ignore" });
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("exit", resolve));
  let instructions = 0;
  for (const file of readdirSync(dir).filter((f) => f.startsWith(`${name}.`))) {
    const total = /^totals: (\d+)/m.exec(readFileSync(join(dir, file), "utf8"));
    if (total) instructions += Number(total[1]);
  }
  console.log(`${name.padEnd(8)} ${Math.round(instructions / N)} instructions per submit`);
}

let port = 16_400 + (process.pid % 500);
for (const name of which) {
  port++;
  if (name === "bullmq") {
    await measure(name, port, (url) => {
      const queue = new Queue("bench", { connection: new Redis(url) });
      return (i) => queue.add("noop", { n: i });
    });
  } else if (name === "outbox" || name === "streams") {
    await measure(name, port, (url) => {
      const store = new RedisStore({
        client: fromIoredis(new Redis(url)),
        prefix: "bench",
        ...(name === "streams" ? { dispatch: "streams" as const } : {}),
      });
      const engine = createEngine({
        store,
        transport: acceptAll,
        handlers: { noop: { run: async () => null } },
        degradation: BENCH_DEGRADATION,
        logger: silentLogger,
      });
      return (i) => engine.broker.submit({ handler: "noop", input: { n: i } });
    });
  } else {
    throw new Error(`unknown contender ${name}: outbox | streams | bullmq`);
  }
}
// KEEP=1 keeps the callgrind files for `callgrind_annotate` (where the instructions go).
if (process.env.KEEP === "1") console.log(`callgrind files kept in ${dir}`);
else rmSync(dir, { recursive: true, force: true });
process.exit(0);
