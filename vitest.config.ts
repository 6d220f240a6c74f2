import { defineConfig } from "vitest/config";

export default defineConfig({
  // `tickwork/…` imports (tests, functions/) resolve to src/ through tsconfig.json "paths".
  resolve: { tsconfigPaths: true },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Redis-backed suites share one server; each uses its own key prefix, so files may run in parallel.
    pool: "forks",
    // Most suites wait on I/O (Redis, sockets, timers, child processes), so twice as many workers
    // as the two cores pays off: 336 s with 3, 313 s with 4 on a busier machine (one run each).
    maxWorkers: 4,
  },
});
