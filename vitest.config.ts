import { configDefaults, defineConfig } from "vitest/config";
import { ISOLATED } from "./test/isolated.ts";
import SlowFirst from "./test/support/sequencer.ts";

const INCLUDE = ["src/**/*.test.ts", "test/**/*.test.ts"];

export default defineConfig({
  // `tickwork/…` imports (tests, functions/) resolve to src/ through tsconfig.json "paths".
  resolve: { tsconfigPaths: true },
  test: {
    // Timeouts catch hangs; they are not measurements. A test that takes 4 s alone took 32 s in a
    // full run on a host with slow loopback I/O (1,000 jobs over HTTP with in-process delivery).
    testTimeout: 90_000,
    hookTimeout: 60_000,
    // Redis-backed suites share one server; each uses its own key prefix, so files may run in parallel.
    pool: "forks",
    // Most suites wait on I/O (Redis, sockets, timers, child processes), so twice as many workers
    // as the two cores pays off: 336 s with 3, 313 s with 4 on a busier machine (one run each).
    maxWorkers: 4,
    // The longest files start first (test/support/sequencer.ts).
    sequence: { sequencer: SlowFirst },
    projects: [
      {
        extends: true,
        // A worker keeps the modules it imported for its next file: importing them again for
        // each file took about a fifth of the suite's CPU
        // (docs/adr/0044-test-files-share-modules.md).
        test: {
          name: "shared",
          include: INCLUDE,
          exclude: [...configDefaults.exclude, ...ISOLATED],
          isolate: false,
        },
      },
      { extends: true, test: { name: "isolated", include: ISOLATED, isolate: true } },
    ],
  },
});
