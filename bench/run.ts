/**
 * @module
 * `npm run bench [-- --quick] [-- --only submit,batch,streams,tick,scale,idle,memory,retention,precision]`:
 * tickwork beside the alternatives, measured side by side in one run. Prints each section's rows, a
 * summary table with the targets (met or not, as measured), and writes `bench/results.json` (a
 * full set of sections only). `--quick` shortens every section (whole run under 2 minutes on 2
 * cores).
 * What is measured and how: `docs/adr/0008-benchmarks.md`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { killAll } from "./lib/children.ts";
import { loadNow, machine } from "./lib/machine.ts";
import type { PairedRatio } from "./lib/median.ts";
import { type ErrorBar, type RatioBar, renderResultsSvg } from "./lib/svg.ts";
import { type BatchFigures, benchBatch } from "./sections/batch.ts";
import { benchIdle, type IdleFigures } from "./sections/idle.ts";
import { benchMemory, type MemoryFigures } from "./sections/memory.ts";
import { benchPrecision, type PrecisionFigures } from "./sections/precision.ts";
import { benchRetention, type RetentionFigures } from "./sections/retention.ts";
import { benchScale, type ScaleFigures, sizeLabel } from "./sections/scale.ts";
import { benchStreams, type StreamsFigures } from "./sections/streams.ts";
import { benchSubmit, type SubmitFigures } from "./sections/submit.ts";
import { benchTick, type TickFigures } from "./sections/tick.ts";

const SECTIONS = [
  "submit",
  "batch",
  "streams",
  "tick",
  "scale",
  "idle",
  "memory",
  "retention",
  "precision",
] as const;
type Section = (typeof SECTIONS)[number];

interface Results {
  generated: string;
  mode: "full" | "quick";
  machine: ReturnType<typeof machine>;
  submit?: SubmitFigures | undefined;
  /** One request per job vs `POST /v1/jobs/batch` of 1,000, same run (sections/batch.ts). */
  batch?: BatchFigures | undefined;
  /** In `results.json`: `submit` (in-process figures, beside the HTTP ones) and `e2e`. */
  streams?: StreamsFigures | undefined;
  tick?: TickFigures | undefined;
  scale?: ScaleFigures | undefined;
  idle?: IdleFigures | undefined;
  memory?: MemoryFigures | undefined;
  retention?: RetentionFigures | undefined;
  precision?: PrecisionFigures | undefined;
  targets: Target[];
  took_s: number;
  /** Seconds each section took. */
  section_s: Partial<Record<Section, number>>;
}

interface Target {
  target: string;
  measured: string;
  met: boolean;
}

function parseArgs(argv: string[]): { quick: boolean; only: Section[] } {
  let quick = false;
  let only: Section[] = [...SECTIONS];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--quick") quick = true;
    else if (arg === "--only" || arg.startsWith("--only=")) {
      const list = arg.includes("=") ? arg.slice(7) : (argv[++i] ?? "");
      only = list.split(",").map((s) => s.trim()) as Section[];
      for (const s of only) {
        if (!SECTIONS.includes(s)) throw new Error(`unknown section ${s}: ${SECTIONS.join(", ")}`);
      }
    } else throw new Error(`unknown argument ${arg}: --quick, --only ${SECTIONS.join(",")}`);
  }
  return { quick, only };
}

function targets(r: Results): Target[] {
  const out: Target[] = [];
  // Each ratio target is judged on the median of its ratios taken round by round (PairedRatio,
  // bench/lib/median.ts); the measured text also gives the rounds and the ratio of the medians.
  const ratio = (
    target: string,
    paired: PairedRatio,
    ofMedians: string,
    met: (x: number) => boolean,
  ): Target => ({
    target,
    measured: `${paired.median} × (rounds ${paired.by_round.join(", ")}; medians: ${ofMedians})`,
    // Unrounded: 0.996 is not 1.0.
    met: met(paired.value),
  });
  if (r.submit) {
    const p = r.submit.paired;
    const cpu = r.submit.cpu_us_per_request;
    out.push(
      ratio(
        "submit ≥ 0.75 × one-SET ceiling",
        p.tickwork_vs_ceiling,
        `${r.submit.tickwork_vs_ceiling} ×`,
        (x) => x >= 0.75,
      ),
      ratio(
        "submit ≥ 1.2 × BullMQ",
        p.tickwork_vs_bullmq,
        `${r.submit.tickwork_vs_bullmq} ×`,
        (x) => x >= 1.2,
      ),
      ratio(
        "submit on QStash ≥ 1.5 × one publishJSON per request",
        p.tickwork_vs_direct_qstash,
        `${r.submit.tickwork_vs_direct_qstash} ×`,
        (x) => x >= 1.5,
      ),
      ratio(
        "submit on QStash, server CPU/request ≤ 1.5 × BullMQ's",
        p.server_cpu_tickwork_vs_bullmq,
        `${cpu.tickwork.server} µs vs ${cpu.bullmq.server} µs`,
        (x) => x <= 1.5,
      ),
      ratio(
        "submit over HTTP, Redis Streams ≥ 1.2 × BullMQ",
        p.streams_vs_bullmq,
        `${r.submit.streams_vs_bullmq} ×`,
        (x) => x >= 1.2,
      ),
      ratio(
        "submit over HTTP, Redis Streams server CPU/request ≤ BullMQ's",
        p.server_cpu_streams_vs_bullmq,
        `${cpu.streams.server} µs vs ${cpu.bullmq.server} µs`,
        (x) => x <= 1,
      ),
    );
  }
  if (r.streams) {
    const s = r.streams.submit;
    const e = r.streams.e2e;
    out.push(
      ratio(
        "submit in process, Redis µs/submit (streams) ≤ 1.2 × BullMQ µs/add",
        s.redis_us_paired.streams_vs_bullmq,
        `${s.redis_us_per_submit.streams} µs vs ${s.redis_us_per_submit.bullmq} µs = ${s.redis_us_streams_vs_bullmq} ×`,
        (x) => x <= 1.2,
      ),
      ratio(
        "submit in process, Redis µs/submit (QStash) ≤ 2 × BullMQ µs/add",
        s.redis_us_paired.qstash_vs_bullmq,
        `${s.redis_us_per_submit.qstash} µs vs ${s.redis_us_per_submit.bullmq} µs = ${s.redis_us_qstash_vs_bullmq} ×`,
        (x) => x <= 2,
      ),
      ratio(
        `end to end (${e.jobs} jobs, concurrency ${e.concurrency}), PullWorker ≥ 1.0 × BullMQ Worker`,
        e.tickwork_vs_bullmq_paired,
        `${e.tickwork_jobs_per_s} vs ${e.bullmq_jobs_per_s} jobs/s = ${e.tickwork_vs_bullmq} ×`,
        (x) => x >= 1,
      ),
    );
  }
  if (r.tick) {
    out.push({
      target: "10,000 occurrences dispatched in ≤ 1.2 s",
      measured: `${r.tick.ms} ms`,
      met: r.tick.occurrences >= 10_000 && r.tick.ms <= 1_200,
    });
    out.push({
      target: "tick engine CPU ≤ 60 µs per occurrence",
      measured: `${r.tick.engine_cpu_us_per_occurrence} µs`,
      met: r.tick.engine_cpu_us_per_occurrence <= 60,
    });
    out.push({
      target: "tick billed commands per occurrence ≤ 4.2",
      measured: `${r.tick.billed_per_occurrence}`,
      met: r.tick.billed_per_occurrence <= 4.2,
    });
  }
  if (r.scale) {
    const sizes = r.scale.sizes;
    const big = sizeLabel(sizes.at(-1)!);
    const small = sizeLabel(sizes[0]!);
    const proxy = big === "1m" ? "" : ` (--quick: ${big}, not 1m)`;
    out.push({
      target: `ms_1m / ms_1k ≤ 1.5${proxy}`,
      measured: `ms_${big} / ms_${small} = ${r.scale.ratio_largest_smallest}`,
      met: r.scale.ratio_largest_smallest <= 1.5,
    });
  }
  if (r.idle) {
    out.push({
      target: "≤ 5 billed commands per idle tick",
      measured: `${r.idle.billed_per_tick}`,
      met: r.idle.billed_per_tick <= 5,
    });
  }
  if (r.precision) {
    for (const c of r.precision.cases) {
      const limit = c.via === "qstash" ? 1_000 : 100;
      out.push({
        target: `fire-time error p99 ≤ ${limit} ms: ${c.name} via ${c.via}`,
        measured: `${c.p99_ms} ms (${c.samples} samples)`,
        met: c.samples > 0 && c.p99_ms <= limit,
      });
    }
  }
  return out;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const line = (r: string[]) => `| ${r.map((cell, c) => cell.padEnd(widths[c]!)).join(" | ")} |`;
  const rule = `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`;
  return [line(rows[0]!), rule, ...rows.slice(1).map(line)].join("\n");
}

function summary(r: Results): string {
  const rows: string[][] = [["section", "figure", "value"]];
  const add = (section: string, figure: string, value: unknown) =>
    rows.push([section, figure, String(value)]);
  if (r.submit) {
    const s = r.submit;
    add(
      "submit",
      "tickwork req/s · p50 · p99",
      `${s.tickwork_rps} · ${s.tickwork_p50_ms} ms · ${s.tickwork_p99_ms} ms`,
    );
    add(
      "submit",
      "streams req/s · p50 · p99",
      `${s.streams_rps} · ${s.streams_p50_ms} ms · ${s.streams_p99_ms} ms`,
    );
    add(
      "submit",
      "one publishJSON per request req/s · p50 · p99",
      `${s.direct_qstash_rps} · ${s.direct_qstash_p50_ms} ms · ${s.direct_qstash_p99_ms} ms`,
    );
    add(
      "submit",
      "ceiling (one SET) req/s · p50 · p99",
      `${s.ceiling_rps} · ${s.ceiling_p50_ms} ms · ${s.ceiling_p99_ms} ms`,
    );
    add(
      "submit",
      "BullMQ queue.add req/s · p50 · p99",
      `${s.bullmq_rps} · ${s.bullmq_p50_ms} ms · ${s.bullmq_p99_ms} ms`,
    );
    add(
      "submit",
      "tickwork / ceiling · / BullMQ · / one publishJSON",
      `${s.tickwork_vs_ceiling} · ${s.tickwork_vs_bullmq} · ${s.tickwork_vs_direct_qstash}`,
    );
    const cpu = s.cpu_us_per_request;
    add(
      "submit",
      "server CPU µs/request tickwork · streams · publishJSON · BullMQ",
      `${cpu.tickwork.server} · ${cpu.streams.server} · ${cpu.direct_qstash.server} · ${cpu.bullmq.server}`,
    );
  }
  if (r.batch) {
    for (const [via, f] of [
      ["QStash", r.batch.qstash],
      ["Streams", r.batch.streams],
    ] as const) {
      add(
        "batch",
        `${via}: jobs/s one request per job · batches of ${r.batch.batch_size} · ×`,
        `${f.single.jobs_per_s} · ${f.batch.jobs_per_s} · ${f.batch_vs_single}`,
      );
    }
  }
  if (r.streams) {
    const s = r.streams.submit;
    const e = r.streams.e2e;
    add(
      "streams",
      "in process submits/s streams · BullMQ",
      `${s.in_process.submits_per_s.streams} · ${s.in_process.submits_per_s.bullmq}`,
    );
    add(
      "streams",
      "Redis µs/submit streams · QStash · BullMQ (commandstats)",
      `${s.redis_us_per_submit.streams} · ${s.redis_us_per_submit.qstash} · ${s.redis_us_per_submit.bullmq}`,
    );
    add(
      "streams",
      `e2e jobs/s PullWorker · BullMQ Worker (${e.jobs} jobs)`,
      `${e.tickwork_jobs_per_s} · ${e.bullmq_jobs_per_s}`,
    );
    add(
      "streams",
      "e2e Redis µs/job PullWorker · BullMQ Worker",
      `${e.redis_us_per_job.tickwork} · ${e.redis_us_per_job.bullmq}`,
    );
  }
  if (r.tick) {
    const t = r.tick;
    add("tick", "occurrences · ms", `${t.occurrences} · ${t.ms}`);
    add(
      "tick",
      "engine CPU µs/occurrence · billed commands/occurrence",
      `${t.engine_cpu_us_per_occurrence} · ${t.billed_per_occurrence}`,
    );
    add(
      "tick",
      "round trips · billed commands · queue requests",
      `${t.redis_round_trips} · ${t.billed_commands} · ${t.queue_requests}`,
    );
  }
  if (r.scale) {
    for (const size of r.scale.sizes) {
      const label = sizeLabel(size);
      add("scale", `ms_${label} (100 due, median of 7)`, r.scale[`ms_${label}`]);
    }
  }
  if (r.idle) {
    add(
      "idle",
      "billed per idle tick · per day",
      `${r.idle.billed_per_tick} · ${r.idle.billed_per_day}`,
    );
    add("idle", "BullMQ per day (one repeatable job, idle worker)", r.idle.bullmq_per_day);
    add(
      "idle",
      "Streams worker, idle: billed per wake-up · per min (default waits)",
      `${r.idle.streams_worker_billed_per_wake} · ${r.idle.streams_worker_billed_per_min}`,
    );
  }
  if (r.memory) {
    add(
      "memory",
      "bytes per schedule · per finished job",
      `${r.memory.bytes_per_schedule} · ${r.memory.bytes_per_job}`,
    );
  }
  if (r.retention) {
    const t = r.retention;
    const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
    add(
      "retention",
      `"1s" schedule, ${t.input_bytes / 1024} KB input, before: MiB/day · 7-day GiB`,
      `${mib(t.before_bytes_per_day)} · ${(t.before_bytes_7d / 2 ** 30).toFixed(1)}`,
    );
    add(
      "retention",
      `after: MiB at ${t.runs / 2} · ${t.runs} runs · steady (runs kept)`,
      `${mib(t.after_bytes_half)} · ${mib(t.after_bytes_full)} · ${mib(t.after_steady_bytes)} (${t.after_job_records}${t.after_cap_held ? "" : ", CAP NOT HELD"})`,
    );
  }
  if (r.precision) {
    for (const c of r.precision.cases) {
      add(
        "precision",
        `${c.name} via ${c.via}: error p50 · p99 · max ms (samples)`,
        `${c.p50_ms} · ${c.p99_ms} · ${c.max_ms} (${c.samples})`,
      );
    }
  }
  const targetRows = [["target", "measured", "status"]];
  for (const t of r.targets) targetRows.push([t.target, t.measured, t.met ? "met" : "NOT MET"]);
  return `${table(rows)}\n\n${table(targetRows)}\n(chaos targets: npm run chaos)`;
}

/** What `results.json` holds that the picture draws (any of it may be missing). */
interface Written {
  mode?: string;
  machine?: { commit?: string };
  submit?: Partial<SubmitFigures> & Partial<StreamsFigures["submit"]>;
  e2e?: Partial<StreamsFigures["e2e"]>;
  tick?: TickFigures;
  precision?: PrecisionFigures;
}

/** `bench/results.svg` from what `results.json` holds. */
function svgOf(w: Written): string {
  const ratios: RatioBar[] = [];
  const add = (label: string, measured: number | undefined, target: number, higher: boolean) => {
    if (measured !== undefined && Number.isFinite(measured) && measured > 0) {
      ratios.push({ label, measured, target, higherIsBetter: higher });
    }
  };
  const s = w.submit;
  const cpu = s?.cpu_us_per_request;
  const redisUs = s?.redis_us_per_submit;
  // The paired medians the targets read; a results.json written before them has only the ratios
  // of the medians.
  const p = s?.paired;
  const pr = s?.redis_us_paired;
  add(
    "submit req/s, QStash ÷ one publishJSON",
    p?.tickwork_vs_direct_qstash.median ?? s?.tickwork_vs_direct_qstash,
    1.5,
    true,
  );
  add(
    "submit req/s, Streams ÷ BullMQ",
    p?.streams_vs_bullmq.median ?? s?.streams_vs_bullmq,
    1.2,
    true,
  );
  if (cpu?.tickwork && cpu.bullmq) {
    const x = p?.server_cpu_tickwork_vs_bullmq.median ?? cpu.tickwork.server / cpu.bullmq.server;
    add("server CPU/submit, QStash ÷ BullMQ", x, 1.5, false);
  }
  if (cpu?.streams && cpu.bullmq) {
    const x = p?.server_cpu_streams_vs_bullmq.median ?? cpu.streams.server / cpu.bullmq.server;
    add("server CPU/submit, Streams ÷ BullMQ", x, 1, false);
  }
  if (redisUs) {
    const q = pr?.qstash_vs_bullmq.median ?? redisUs.qstash / redisUs.bullmq;
    add("Redis µs/submit, QStash ÷ BullMQ", q, 2, false);
    const st = pr?.streams_vs_bullmq.median ?? redisUs.streams / redisUs.bullmq;
    add("Redis µs/submit, Streams ÷ BullMQ", st, 1.2, false);
  }
  add(
    "end to end jobs/s, Streams ÷ BullMQ",
    w.e2e?.tickwork_vs_bullmq_paired?.median ?? w.e2e?.tickwork_vs_bullmq,
    1,
    true,
  );
  if (w.tick) {
    add("10,000-occurrence tick ÷ 1.2 s", w.tick.ms / 1_200, 1, false);
    add("tick engine CPU/occurrence ÷ 60 µs", w.tick.engine_cpu_us_per_occurrence / 60, 1, false);
  }
  const errors: ErrorBar[] = (w.precision?.cases ?? []).map((c) => ({
    label: `${c.name} via ${c.via === "qstash" ? "QStash (cron each minute)" : "tickwork start"}`,
    p50: c.p50_ms,
    p99: c.p99_ms,
    max: c.max_ms,
    limit: c.via === "qstash" ? 1_000 : 100,
  }));
  return renderResultsSvg(
    `${w.mode ?? "?"} run, commit ${w.machine?.commit ?? "?"}`,
    ratios,
    errors,
  );
}

async function main(): Promise<void> {
  if (process.argv.includes("--svg")) {
    // Redraw the picture from results.json (no measuring).
    const written = JSON.parse(readFileSync(new URL("./results.json", import.meta.url), "utf8"));
    writeFileSync(new URL("./results.svg", import.meta.url), svgOf(written as Written));
    console.log("wrote bench/results.svg from bench/results.json");
    return;
  }
  const { quick, only } = parseArgs(process.argv.slice(2));
  const started = performance.now();
  const results: Results = {
    generated: new Date().toISOString(),
    mode: quick ? "quick" : "full",
    machine: machine(),
    targets: [],
    took_s: 0,
    section_s: {},
  };
  const m = results.machine;
  const log = (line: string) => console.log(line);
  log(
    `tickwork bench (${results.mode}) on ${m.cpu} (${m.hypervisor === "none" ? "bare metal" : m.hypervisor}), ${m.cores} cores, ${m.memory_gib} GiB, Node ${m.node}, Redis ${m.redis}, load ${m.load_at_start}, commit ${m.commit}`,
  );
  log("");
  const timed = async <T>(section: Section, run: () => Promise<T>): Promise<T | undefined> => {
    if (!only.includes(section)) return undefined;
    const t0 = performance.now();
    const figures = await run();
    results.section_s[section] = Math.round((performance.now() - t0) / 100) / 10;
    log(`  (${section}: ${results.section_s[section]} s)`);
    return figures;
  };
  results.submit = await timed("submit", () => benchSubmit(quick, log));
  results.batch = await timed("batch", () => benchBatch(quick, log));
  results.streams = await timed("streams", () => benchStreams(quick, log));
  results.tick = await timed("tick", () => benchTick(log));
  results.scale = await timed("scale", () => benchScale(quick, log));
  results.idle = await timed("idle", () => benchIdle(quick, log));
  results.memory = await timed("memory", () => benchMemory(quick, log));
  results.retention = await timed("retention", () => benchRetention(quick, log));
  results.precision = await timed("precision", () => benchPrecision(quick, log));
  results.targets = targets(results);
  results.took_s = Math.round((performance.now() - started) / 100) / 10;
  log("");
  log(summary(results));
  if (SECTIONS.every((section) => only.includes(section))) {
    const path = new URL("./results.json", import.meta.url);
    const { targets: met, took_s, section_s, streams, submit, ...figures } = results;
    const { generated, mode, machine: on, ...rest } = figures;
    // The in-process submit figures sit beside the HTTP ones; the drain is `e2e`.
    const ordered = {
      generated,
      mode,
      machine: on,
      submit: { ...submit, ...streams?.submit },
      e2e: streams?.e2e,
      ...rest,
      targets: met,
      took_s,
      section_s,
      load_at_end: loadNow(),
    };
    writeFileSync(path, `${JSON.stringify(ordered, null, 2)}\n`);
    writeFileSync(new URL("./results.svg", import.meta.url), svgOf(ordered as Written));
    log(`\nwrote bench/results.json and bench/results.svg (${results.mode}, ${results.took_s} s)`);
  } else {
    log(`\n--only: bench/results.json left as it was (${results.took_s} s)`);
  }
}

main().then(
  () => {
    killAll();
    process.exit(0);
  },
  (error: unknown) => {
    console.error(
      `\nbench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    killAll();
    process.exit(1);
  },
);
