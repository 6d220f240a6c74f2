/**
 * @module
 * `npx tsx bench/http-ab.ts [--rounds N] [--seconds S] dir …`: the HTTP submit on Redis Streams
 * (`POST /v1/jobs`, the submit section's `streams` contender) of built packages side by side,
 * each round also running BullMQ's route, to compare a change to the submit path with the code
 * before it on one host at one time (docs/adr/0043-submits-in-groups.md was measured this way).
 *
 * Each `dir` is a built package's `dist/` (see `bench/drain-ab.ts` for building another commit);
 * a round copies it over `dist/` before its run, so `dist/` holds the last one afterwards
 * (`npm run build` restores it). Every round runs BullMQ and each directory once, the order
 * reversed every other round, and prints requests/s and the server's and Redis's CPU per
 * request, each also as a ratio to BullMQ's in the same round; then the medians per directory.
 *
 * The server file is this checkout's (`bench/servers/submit-server.ts`): it passes `serve` of
 * tickwork/node a function returning the app, which a `dist/` built before that was possible
 * (docs/adr/0046-direct-submit.md) does not take.
 */
import { cpSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { runContender } from "./sections/submit.ts";

let rounds = 3;
let seconds = 6;
const dirs: string[] = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const arg = argv[i]!;
  if (arg === "--rounds") rounds = Number(argv[++i]);
  else if (arg === "--seconds") seconds = Number(argv[++i]);
  else dirs.push(resolve(arg));
}
if (dirs.length === 0 || !(rounds > 0) || !(seconds > 0)) {
  throw new Error("usage: bench/http-ab.ts [--rounds N] [--seconds S] dir …");
}
const dist = resolve("dist");
const quiet = () => {};
/** Per directory, each round's ratios to BullMQ's figures of the same round. */
const ratios = new Map<string, { rps: number[]; server: number[]; redis: number[] }>();
for (const dir of dirs) ratios.set(dir, { rps: [], server: [], redis: [] });
const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
for (let round = 0; round < rounds; round++) {
  const order = ["bullmq", ...dirs];
  const figures = new Map<string, { rps: number; server: number; redis: number }>();
  for (const who of round % 2 === 0 ? order : order.reverse()) {
    if (who !== "bullmq") {
      rmSync(dist, { recursive: true, force: true });
      cpSync(who, dist, { recursive: true });
    }
    const run = await runContender(who === "bullmq" ? "bullmq" : "streams", 2, seconds, quiet);
    const f = { rps: Math.round(run.figures.rps), server: run.cpu.server, redis: run.cpu.redis };
    figures.set(who, f);
    console.log(
      `round ${round + 1} ${who}: ${f.rps} req/s, server ${f.server} µs, Redis ${f.redis} µs per request`,
    );
  }
  const b = figures.get("bullmq")!;
  for (const dir of dirs) {
    const f = figures.get(dir)!;
    const r = ratios.get(dir)!;
    r.rps.push(f.rps / b.rps);
    r.server.push(f.server / b.server);
    r.redis.push(f.redis / b.redis);
  }
}
for (const dir of dirs) {
  const r = ratios.get(dir)!;
  const two = (n: number) => n.toFixed(2);
  console.log(
    `${dir}: medians of ${rounds} rounds, against BullMQ: req/s ${two(median(r.rps))}, server CPU per request ${two(median(r.server))}, Redis CPU per request ${two(median(r.redis))}`,
  );
}
