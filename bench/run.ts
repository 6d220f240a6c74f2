/**
 * @module
 * `npm run bench [-- --quick] [-- --only submit,streams,tick,scale,idle,memory,retention]`:
 * tickwork beside the alternatives, measured side by side in one run. Prints each section's rows, a
 * summary table with the targets (met or not, as measured), and writes `bench/results.json` (a
 * full set of sections only). `--quick` shortens every section (whole run under 2 minutes on 2
 * cores).
 * What is measured and how: `docs/adr/0008-benchmarks.md`.
 */
import { writeFileSync } from "node:fs";
import { killAll } from "./lib/children.ts";
import { loadNow, machine } from "./lib/machine.ts";
import { benchIdle, type IdleFigures } from "./sections/idle.ts";
import { benchMemory, type MemoryFigures } from "./sections/memory.ts";
import { benchRetention, type RetentionFigures } from "./sections/retention.ts";
import { benchScale, type ScaleFigures, sizeLabel } from "./sections/scale.ts";
import { benchStreams, type StreamsFigures } from "./sections/streams.ts";
import { benchSubmit, type SubmitFigures } from "./sections/submit.ts";
import { benchTick, type TickFigures } from "./sections/tick.ts";

const SECTIONS = ["submit", "streams", "tick", "scale", "idle", "memory", "retention"] as const;
type Section = (typeof SECTIONS)[number];

interface Results {
  generated: string;
  mode: "full" | "quick";
  machine: ReturnType<typeof machine>;
  submit?: SubmitFigures | undefined;
  /** In `results.json`: `submit` (in-process figures, beside the HTTP ones) and `e2e`. */
  streams?: StreamsFigures | undefined;
  tick?: TickFigures | undefined;
  scale?: ScaleFigures | undefined;
  idle?: IdleFigures | undefined;
  memory?: MemoryFigures | undefined;
  retention?: RetentionFigures | undefined;
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
  if (r.submit) {
    out.push({
      target: "submit ≥ 0.75 × one-SET ceiling",
      measured: `${r.submit.tickwork_vs_ceiling} ×`,
      met: r.submit.tickwork_vs_ceiling >= 0.75,
    });
    out.push({
      target: "submit ≥ 1.2 × BullMQ",
      measured: `${r.submit.tickwork_vs_bullmq} ×`,
      met: r.submit.tickwork_vs_bullmq >= 1.2,
    });
    const cpu = r.submit.cpu_us_per_request;
    out.push({
      target: "submit over HTTP, Redis Streams ≥ 1.2 × BullMQ",
      measured: `${r.submit.streams_vs_bullmq} ×`,
      met: r.submit.streams_vs_bullmq >= 1.2,
    });
    out.push({
      target: "submit over HTTP, Redis Streams server CPU/request ≤ BullMQ's",
      measured: `${cpu.streams.server} µs vs ${cpu.bullmq.server} µs`,
      met: cpu.streams.server <= cpu.bullmq.server,
    });
  }
  if (r.streams) {
    const s = r.streams.submit;
    out.push({
      target: "submit in process, Redis µs/submit (streams) ≤ 1.2 × BullMQ µs/add",
      measured: `${s.redis_us_per_submit.streams} µs vs ${s.redis_us_per_submit.bullmq} µs = ${s.redis_us_streams_vs_bullmq} ×`,
      met: s.redis_us_per_submit.streams <= 1.2 * s.redis_us_per_submit.bullmq,
    });
    const e = r.streams.e2e;
    out.push({
      target: `end to end (${e.jobs} jobs, concurrency ${e.concurrency}), PullWorker ≥ 1.0 × BullMQ Worker`,
      measured: `${e.tickwork_jobs_per_s} vs ${e.bullmq_jobs_per_s} jobs/s = ${e.tickwork_vs_bullmq} ×`,
      met: e.tickwork_jobs_per_s >= e.bullmq_jobs_per_s,
    });
  }
  if (r.tick) {
    out.push({
      target: "10,000 occurrences dispatched in ≤ 2 s",
      measured: `${r.tick.ms} ms`,
      met: r.tick.occurrences >= 10_000 && r.tick.ms <= 2_000,
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
      "tickwork / ceiling · tickwork / BullMQ",
      `${s.tickwork_vs_ceiling} · ${s.tickwork_vs_bullmq}`,
    );
    const cpu = s.cpu_us_per_request;
    add(
      "submit",
      "server CPU µs/request tickwork · streams · BullMQ",
      `${cpu.tickwork.server} · ${cpu.streams.server} · ${cpu.bullmq.server}`,
    );
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
      "Redis µs/submit streams · BullMQ (commandstats)",
      `${s.redis_us_per_submit.streams} · ${s.redis_us_per_submit.bullmq}`,
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
  const targetRows = [["target", "measured", "status"]];
  for (const t of r.targets) targetRows.push([t.target, t.measured, t.met ? "met" : "NOT MET"]);
  return `${table(rows)}\n\n${table(targetRows)}\n(chaos targets: npm run chaos)`;
}

async function main(): Promise<void> {
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
  results.streams = await timed("streams", () => benchStreams(quick, log));
  results.tick = await timed("tick", () => benchTick(log));
  results.scale = await timed("scale", () => benchScale(quick, log));
  results.idle = await timed("idle", () => benchIdle(quick, log));
  results.memory = await timed("memory", () => benchMemory(quick, log));
  results.retention = await timed("retention", () => benchRetention(quick, log));
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
    log(`\nwrote bench/results.json (${results.mode}, ${results.took_s} s)`);
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
