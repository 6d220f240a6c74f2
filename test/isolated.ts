/**
 * @module
 * Test files that change what a process holds for every module in it: fake timers, module mocks,
 * stubbed globals and environment, process listeners, the OpenTelemetry globals (the engine's
 * tracer caches the provider it first meets), or a test helper's module-level connection and
 * hooks. Each of these runs in a process of its own; every other file shares its worker's
 * modules with the files before it (vitest.config.ts, projects `isolated` and `shared`).
 * `test/architecture/isolation.test.ts` fails when a file that does such things is missing here.
 */
export const ISOLATED = [
  "test/tracing/**/*.test.ts",
  "src/adapter/node/nodes.test.ts",
  "src/adapter/node/tick-timer.test.ts",
  "src/transport/qstash/batch-wire.test.ts",
  "src/transport/local/dedup-window.test.ts",
  "src/transport/local/local-transport.test.ts",
  "src/transport/local/local-transport-lifecycle.test.ts",
  "src/transport/local/local-transport-retries.test.ts",
  "src/store/redis/redis-store.test.ts",
  "src/store/redis/redis-store-listing.test.ts",
  "test/engine/publish.test.ts",
  "test/vercel/vercel.test.ts",
  "test/qstash/engine.test.ts",
  "test/qstash/rest-cost.test.ts",
];
