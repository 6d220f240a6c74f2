/**
 * What the local transport keeps per message once it is delivered: only its dedup id, for the dedup
 * window — nothing of the body, request, response, timers or closures. N messages with job ids as
 * the broker makes them go through `publish` to an in-process `deliver`; the heap plus external
 * memory (ArrayBuffers) still in use after a full GC, divided by N, is the figure. It must not
 * depend on the payload's size.
 *
 * The figures are measured in a child process (this file, run by Node under tsx with
 * `--expose-gc`), so nothing else the test process does, compiles or frees gets counted. It
 * compiles the path once, then measures each payload size with a transport of its own.
 *
 * Figures (printed): `npx vitest run src/transport/local/retained-memory.test.ts`; another N with
 * `TICKWORK_RETAINED_N=50000`. On Node 20 (x64), for tiny and 10 KB payloads alike: 97 to 122
 * bytes per message at N = 20,000, about 80 at 30,000 and 97 at 50,000 (the figure follows how full
 * the `Map` and ring, whose capacities are powers of two, end up); the transport that kept a
 * `{ messageId, expiresAt }` object under the caller's id string retained about 195, 178 and 190.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { OutboxMessage } from "../../core/model.ts";
import { newJobId } from "../../engine/ids.ts";
import { LocalTransport } from "./index.ts";

/** Bytes per delivered message allowed: about 1.4× the measured figure, 0.8× the old one. */
const MAX_RETAINED_BYTES = 160;
const N = Number(process.env.TICKWORK_RETAINED_N ?? 20_000);
/** Set (to `n`) in the child process that measures. */
const CHILD = "TICKWORK_RETAINED_MEMORY_CHILD";
const WARMUP = 2_000;
/** How long the measuring child may take (see {@link measureInChild}). */
const CHILD_TIMEOUT_MS = 600_000;
const BATCH = 500;

function message(pad: string): OutboxMessage {
  const id = newJobId();
  return {
    id,
    dedupId: id,
    notBefore: 0,
    recoverAt: 0,
    job: {
      id,
      tenant: "default",
      handler: "email.send",
      input: { to: "ada@example.com", pad },
      priority: 5,
      timeoutMs: 30_000,
      retries: 3,
      tags: [],
      runAt: 0,
      createdAt: 0,
    },
  };
}

/** Heap and external memory in use after full collections (and turns for finalizers). */
async function inUse(gc: () => void): Promise<number> {
  for (let i = 0; i < 6; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

/**
 * Bytes still held per message after `n` messages with `payloadBytes` of input were delivered, by
 * a transport that had delivered `WARMUP` before (not counted: its first ids, pools, caches).
 */
async function retainedPerMessage(gc: () => void, payloadBytes: number, n: number) {
  const transport = new LocalTransport({
    workerUrl: "http://worker.local/v1/worker",
    signingKey: "sig_retained_memory",
    deliver: async (request) => {
      await request.text();
      return new Response('{"ok":true}', { status: 200 });
    },
  });
  const pad = "x".repeat(payloadBytes);
  const push = async (count: number) => {
    for (let sent = 0; sent < count; sent += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, count - sent) }, () => message(pad));
      await transport.publish(batch);
      await transport.idle();
    }
  };
  try {
    await push(WARMUP);
    const before = await inUse(gc);
    await push(n);
    const after = await inUse(gc);
    const { delivered, pending, inFlight } = transport.stats();
    if (delivered !== WARMUP + n || pending !== 0 || inFlight !== 0) {
      throw new Error(`delivered ${delivered} of ${WARMUP + n} (${pending} pending)`);
    }
    return (after - before) / n;
  } finally {
    await transport.close();
  }
}

const PAYLOADS = [
  ["tiny", 16],
  ["10 KB", 10_240],
] as const;

/** Run this file as the measuring child process; resolves to its figure per payload size. */
function measureInChild(n: number): Promise<number[]> {
  const file = fileURLToPath(import.meta.url);
  const root = fileURLToPath(new URL("../../../", import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      // Bytecode flushing would free startup code mid-measurement, as the figure drifts lower.
      ["--expose-gc", "--no-flush-bytecode", "--import", "tsx", file],
      // A bound for a hang, not a measure: alone the child takes about 17 s, in a full `npm test`
      // about 60 s, and past 170 s on a host running two test suites at once.
      { cwd: root, env: { ...process.env, [CHILD]: String(n) }, timeout: CHILD_TIMEOUT_MS },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`measuring child failed: ${error.message}\n${stderr}`));
        else resolve((JSON.parse(stdout) as { bytesPerMessage: number[] }).bytesPerMessage);
      },
    );
  });
}

const child = process.env[CHILD];
if (child !== undefined) {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with --expose-gc");
  const n = Number(child);
  // Compile the whole path first: optimised code is heap too, and must not count as retained.
  await retainedPerMessage(gc, 1_024, 10_000);
  const bytesPerMessage: number[] = [];
  for (const [, payloadBytes] of PAYLOADS) {
    bytesPerMessage.push(await retainedPerMessage(gc, payloadBytes, n));
  }
  process.stdout.write(JSON.stringify({ bytesPerMessage }));
} else {
  describe("LocalTransport retained memory", () => {
    let measured: Promise<number[]> | undefined;
    PAYLOADS.forEach(([label], index) => {
      it(
        `keeps under ${MAX_RETAINED_BYTES} bytes per delivered message (${label} payloads)`,
        async () => {
          measured ??= measureInChild(N);
          const perMessage = (await measured)[index] as number;
          console.log(
            `local transport: ${perMessage.toFixed(1)} bytes retained per delivered message (${N} messages, ${label} payloads)`,
          );
          expect(perMessage).toBeLessThan(MAX_RETAINED_BYTES);
        },
        CHILD_TIMEOUT_MS + 10_000,
      );
    });
  });
}
