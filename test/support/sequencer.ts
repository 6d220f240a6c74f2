/**
 * @module
 * The order test files start in: the longest first, so that none of them starts last and holds
 * the run up while the other workers are idle. Vitest knows a file's duration once it has run it
 * on this checkout (its cache, under node_modules/.vite); a clean clone (CI) has no cache, and
 * then {@link SLOW} gives the files that took longest in a full run, longest first. The rest
 * follow in the order vitest gives them. As in vitest's own order, the files that run each in a
 * process of their own (`ISOLATED`, test/isolated.ts) come first: a worker that shares its
 * modules between files keeps them only while the next file it takes shares them too.
 */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Seconds each took in a full `npm test` on a two-core host (vitest's duration cache after a
 * clean-clone CI run).
 */
export const SLOW: Record<string, number> = {
  "test/package/consumer.test.ts": 75,
  "test/engine/invariants-upstash.test.ts": 65,
  "src/transport/local/retained-memory.test.ts": 51,
  "test/streams/crash.test.ts": 50,
  "test/qstash/engine.test.ts": 39,
  "test/contract/nodes.test.ts": 36,
  "test/engine/invariants-redis.test.ts": 35,
  "test/engine/invariants-memory.test.ts": 35,
  "test/dev/fleet-limits.test.ts": 26,
  "test/contract/upstash.test.ts": 23,
  "test/http/batch.test.ts": 23,
  "test/engine/invariants-cloudflare-queues.test.ts": 22,
  "test/dev/fleet-nodes.test.ts": 22,
  "test/engine/engine.test.ts": 22,
  "test/contract/redis.test.ts": 19,
  "test/cloudflare/workerd-queues.test.ts": 18,
  "test/streams/invariants.test.ts": 18,
  "test/engine/reaper.test.ts": 18,
  "test/contract/memory.test.ts": 17,
  "test/schedule/croner-agreement.test.ts": 16,
  "test/observability/dashboard.browser.test.ts": 15,
};

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const cache = this.ctx.cache;
    const seconds = (spec: TestSpecification): number => {
      const file = relative(root, spec.moduleId);
      const known = cache.getFileTestResults(`${spec.project.name}:${file}`);
      return known ? known.duration / 1000 : (SLOW[file] ?? 0);
    };
    const weight = new Map(sorted.map((spec) => [spec, seconds(spec)]));
    const isolated = (spec: TestSpecification) => (spec.project.config.isolate ? 0 : 1);
    // Stable: files of equal weight keep vitest's order.
    return sorted.sort((a, b) => isolated(a) - isolated(b) || weight.get(b)! - weight.get(a)!);
  }
}
