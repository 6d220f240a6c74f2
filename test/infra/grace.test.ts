/**
 * The time `tickwork start` may take to shut down after SIGTERM, against the time each
 * deployment file gives it before SIGKILL. `startServer` lets requests in flight finish for
 * `shutdownTimeoutMs` (10 s outside dev), then runs its cleanup steps (node registry, pulling,
 * transport, the publishes under way, the store) under a second deadline of the same length:
 * up to 20 s, and then what runs past the deadline: up to about 24 s in all (README).
 * Docker and Compose send SIGKILL 10 s after SIGTERM unless told otherwise
 * (`stop_grace_period`, `docker stop --time`).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseYamlDocuments } from "./yaml-subset.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
// biome-ignore lint/suspicious/noExplicitAny: manifests are inspected freely
type Doc = any;

/** The shutdown's two deadlines, read from the code: `(dev ? 2_000 : 10_000)` twice. */
const start = read("src/adapter/node/start.ts");
const drainMs = Number(
  /shutdownTimeoutMs \?\? \(dev \? [\d_]+ : ([\d_]+)\)/.exec(start)?.[1]?.replaceAll("_", ""),
);
/** A constant `const NAME = <ms>;` of `file`. */
const constantMs = (file: string, name: string) =>
  Number(new RegExp(`const ${name} = ([\\d_]+);`).exec(read(file))?.[1]?.replaceAll("_", ""));
/**
 * Past the second deadline: the pull worker's last acknowledgements, the Redis connection's
 * close, and the least each remaining step gets (five of them).
 */
const OVERRUN_MS =
  constantMs("src/engine/pull-worker.ts", "FINAL_ACK_MS") +
  constantMs("src/adapter/node/ioredis.ts", "QUIT_MS") +
  5 * constantMs("src/adapter/node/start.ts", "STEP_MIN_MS");
const SHUTDOWN_MS = 2 * drainMs + OVERRUN_MS;

/** Compose's duration syntax (`30s`, `1m30s`), in ms; Docker's default when unset: 10 s. */
function composeDurationMs(text: string | undefined): number {
  if (text === undefined) return 10_000;
  let ms = 0;
  for (const [, n, unit] of String(text).matchAll(/(\d+)(ms|s|m|h)/g)) {
    ms += Number(n) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as "s"];
  }
  return ms;
}

describe("SIGTERM grace periods", () => {
  it("reads the shutdown's bound from the code (10 s + 10 s, and what runs past the deadline)", () => {
    expect(2 * drainMs).toBe(20_000);
    expect(OVERRUN_MS).toBe(4_250);
  });

  it("infra/docker-compose.yml gives each tickwork service the whole shutdown before SIGKILL", () => {
    const [compose] = parseYamlDocuments(read("infra/docker-compose.yml")) as Doc[];
    for (const name of ["api", "tick"]) {
      const grace = composeDurationMs(compose.services[name].stop_grace_period);
      expect(grace, `${name}: stop_grace_period`).toBeGreaterThan(SHUTDOWN_MS);
    }
  });

  it("infra/k8s gives each Deployment its preStop sleep plus the whole shutdown", () => {
    for (const file of ["infra/k8s/api-worker.yaml", "infra/k8s/tick.yaml"]) {
      for (const doc of parseYamlDocuments(read(file)) as Doc[]) {
        if (doc.kind !== "Deployment") continue;
        const spec = doc.spec.template.spec;
        const preStop = spec.containers[0].lifecycle?.preStop?.exec?.command ?? [];
        const sleepMs = preStop[0] === "sleep" ? Number(preStop[1]) * 1_000 : 0;
        expect(spec.terminationGracePeriodSeconds * 1_000, file).toBeGreaterThan(
          sleepMs + SHUTDOWN_MS,
        );
      }
    }
  });
});
