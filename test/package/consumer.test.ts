/**
 * tickwork as a user gets it: the packed tarball installed into fresh apps, the README's code as
 * their files. Plain Node imports every entry and runs the README's embedding paths end to end;
 * strict TypeScript (both module resolutions, `skipLibCheck: false`) compiles them and refuses a
 * misspelt handler or a wrong input; a Worker bundles with wrangler; publint and
 * arethetypeswrong find nothing; an app with only the required peers still loads the core entries
 * and names the package it lacks when asked for more. `npm test` builds dist/ before this runs.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deletePrefix, REDIS_URL, ROOT } from "../dev/server.ts";
import {
  bundleWorker,
  createApp,
  locked,
  type Packed,
  packTickwork,
  readmeFiles,
  runRepoBin,
  tempDir,
  writeFiles,
} from "../support/consumer-app.ts";
import { onFreePort } from "../support/free-port.ts";
import { type QStashDouble, startQStashDouble } from "../support/qstash-double/index.ts";

const PEERS = ["hono", "zod"];
const CLIENTS = ["ioredis", "@upstash/redis", "@upstash/qstash", "@hono/node-server"];
const EXPORTS = Object.keys(
  (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { exports: object }).exports,
).filter((entry) => entry !== "./package.json");
const specifier = (entry: string) => (entry === "." ? "tickwork" : `tickwork/${entry.slice(2)}`);

const STRICT = {
  target: "ES2022",
  lib: ["ES2023", "DOM", "DOM.Iterable"],
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  noImplicitOverride: true,
  verbatimModuleSyntax: true,
  skipLibCheck: false,
};

/** Every entry, imported for its types; and the mistakes the handler map must catch. */
const TYPES_CHECK = `${EXPORTS.map((entry, i) => `import * as entry${i} from "${specifier(entry)}";`).join("\n")}
import { createEngine, defineHandlers } from "tickwork";
import { createClient } from "tickwork/client";
import { LocalTransport } from "tickwork/local";
import { MemoryStore } from "tickwork/memory";
import { handlers } from "./tickwork/handlers.js";
import { webhookHandlers } from "./tickwork/webhooks.js";

export const entries = [${EXPORTS.map((_, i) => `entry${i}`).join(", ")}];
const engine = createEngine({
  store: new MemoryStore(),
  transport: new LocalTransport({ workerUrl: "http://127.0.0.1:1/v1/worker", signingKey: "k" }),
  handlers,
});
const tw = createClient<typeof handlers>({ url: "http://127.0.0.1:1" });
export async function fine(): Promise<void> {
  await engine.broker.submit({ handler: "email.send", input: { to: "a@b.c" } });
  await engine.broker.submit({ handler: "cache.flush" });
  await tw.jobs.submit({ handler: "email.send", input: { to: "a@b.c", subject: "Hi" } });
  await tw.schedules.create({ handler: "cache.flush", schedule: "5m", input: [1, 2] });
  const hooks = createClient<typeof webhookHandlers>({ url: "http://127.0.0.1:1" });
  await hooks.jobs.submit({ handler: "stripe.event", input: { body: {} } });
  // The README's way to serve both maps: one map spread from the two, typed as each was.
  const all = defineHandlers({ ...handlers, ...webhookHandlers });
  const both = createClient<typeof all>({ url: "http://127.0.0.1:1" });
  await both.jobs.submit({ handler: "github.event", input: { body: {}, headers: {} } });
  const job2 = await both.jobs.submit({ handler: "email.send", input: { to: "a@b.c" } });
  const sentTo: string = (await job2.result()).sent;
  console.log(sentTo);
  // A map where no handler has an input schema still names its handlers (they were \`never\`).
  const bare = defineHandlers({ echo: { run: (input) => input } });
  await createClient<typeof bare>({ url: "http://127.0.0.1:1" }).jobs.submit({ handler: "echo" });
  // Options a caller passes on as it got them: \`undefined\` is absent (exactOptionalPropertyTypes).
  const absent = (): string | undefined => undefined;
  const job = await tw.jobs.submit({ handler: "cache.flush", idempotencyKey: absent() });
  job.updates({ lastEventId: absent(), maxRetries: undefined, idleTimeoutMs: undefined });
  await tw.tick({ secret: absent() });
  const child = { handler: "cache.flush" as const };
  await tw.flows.submit({ children: [child], parent: child, idempotencyKey: absent() });
  await tw.schedules.handle("s").update({ handler: undefined, schedule: absent(), tz: absent() });
}
`;

/** Each line a mistake the compiler must report (checked by line). */
const MISTAKES = `import { createEngine, type HandlerContext } from "tickwork";
import { createClient } from "tickwork/client";
import { LocalTransport } from "tickwork/local";
import { MemoryStore } from "tickwork/memory";
import { handlers } from "./tickwork/handlers.js";
import { webhookHandlers } from "./tickwork/webhooks.js";

const engine = createEngine({
  store: new MemoryStore(),
  transport: new LocalTransport({ workerUrl: "http://127.0.0.1:1/v1/worker", signingKey: "k" }),
  handlers,
});
const tw = createClient<typeof handlers>({ url: "http://127.0.0.1:1" });
export const mistakes = [
  engine.broker.submit({ handler: "email.sned", input: { to: "a@b.c" } }),
  engine.broker.submit({ handler: "email.send", input: { to: 42 } }),
  engine.broker.createSchedule({ handler: "email.send", schedule: "1h" }),
  tw.jobs.submit({ handler: "email.sned", input: { to: "a@b.c" } }),
  tw.jobs.submit({ handler: "email.send", input: { to: 42 } }),
  tw.schedules.create({ handler: "emails.send", schedule: "1h", input: { to: "a@b.c" } }),
  (ctx: HandlerContext) => ctx.jobs.submit<typeof handlers>({ handler: "user.welcome", input: {} }),
  createClient<typeof webhookHandlers>({ url: "" }).jobs.submit({ handler: "stripe.evnt" }),
];
`;
const MISTAKE_LINES = [15, 16, 17, 18, 19, 20, 21, 22];

/** Plain Node: import every entry, print how many names each has. */
const IMPORT_ALL = `const entries = ${JSON.stringify(EXPORTS.map(specifier))};
for (const name of entries) {
  const mod = await import(name);
  console.log(name, Object.keys(mod).length);
}
`;

/** The typed client in an app whose only library types are Node's. */
const NODOM_CLIENT = `import { createClient } from "tickwork/client";
const tw = createClient({ url: "http://127.0.0.1:1", headers: { "x-app": "a" } });
export const submitted = tw.jobs.submit({ handler: "echo", input: 1 });
`;

function tsconfig(resolution: "nodenext" | "bundler", extra: object = {}): string {
  const module =
    resolution === "nodenext"
      ? { module: "NodeNext", moduleResolution: "NodeNext" }
      : { module: "ESNext", moduleResolution: "Bundler", noEmit: true };
  return `${JSON.stringify({ compilerOptions: { ...STRICT, ...module, types: ["node"], rootDir: ".", outDir: "out", ...extra }, include: ["src"] }, null, 2)}\n`;
}

/** Run `node file` in `cwd` to its end. */
function runNode(
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env } });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (out += chunk));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, out }));
  });
}

/** Start `node file`; resolves with the child once a line matching `ready` is printed. */
function startNode(
  cwd: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env } });
    let out = "";
    const exited = new Promise<number | null>((done) => child.once("close", done));
    const onData = (chunk: Buffer) => {
      out += chunk;
      if (ready.test(out)) resolve({ child, output: () => out, exited });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    void exited.then((code) => reject(new Error(`exited (${code}) before ready:\n${out}`)));
  });
}

describe("the packed package in a fresh app", () => {
  const work = tempDir("consumer");
  const app = join(work, "app");
  const minimal = join(work, "minimal");
  let packed: Packed;

  beforeAll(async () => {
    packed = await packTickwork(work);
    await Promise.all([
      createApp(app, [packed.tarball, ...[...PEERS, ...CLIENTS, "@types/node"].map(locked)]),
      createApp(minimal, [packed.tarball, ...[...PEERS, "@types/node"].map(locked)]),
    ]);
    writeFiles(app, {
      ...readmeFiles(),
      "import-all.mjs": IMPORT_ALL,
      "src/types-check.ts": TYPES_CHECK,
      "tsconfig.json": tsconfig("nodenext"),
      "tsconfig.bundler.json": tsconfig("bundler"),
      // A Node app without the DOM library: the client's declarations name no DOM-only type.
      "nodom/src/client.ts": NODOM_CLIENT,
      "nodom/package.json": '{ "type": "module" }\n',
      "nodom/tsconfig.json": `${JSON.stringify({ compilerOptions: { ...STRICT, lib: ["ES2023"], module: "NodeNext", moduleResolution: "NodeNext", noEmit: true, types: ["node"], typeRoots: ["../node_modules/@types"] }, include: ["src"] }, null, 2)}\n`,
    });
  }, 300_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("ships dist, bin, schema, the docs the README links to, README, SECURITY and LICENSE only", () => {
    const shipped =
      /^(dist\/|bin\/|schema\/|docs\/|bench\/(results\.(svg|json)|chaos\.json)$|(README|SECURITY)\.md$|LICENSE$|package\.json$)/;
    expect(packed.files.filter((file) => !shipped.test(file))).toEqual([]);
    expect(packed.files.filter((file) => /\.test\.|\/test\/|\.ci|infra/.test(file))).toEqual([]);
    // Every relative link and image of the README, SECURITY.md and the docs, as an app's
    // node_modules holds them, opens.
    const root = join(app, "node_modules/tickwork");
    const pages = packed.files.filter((file) => file.endsWith(".md"));
    expect(pages).toContain("docs/architecture.md");
    const broken: string[] = [];
    let readmeLinks = 0;
    for (const page of pages) {
      const text = readFileSync(join(root, page), "utf8");
      const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)]
        .map((m) => m[1]!.split("#")[0]!)
        .filter((link) => link !== "" && !/^[a-z]+:/.test(link));
      if (page === "README.md") readmeLinks = links.length;
      for (const link of new Set(links)) {
        if (!existsSync(join(root, dirname(page), link))) broken.push(`${page}: ${link}`);
      }
    }
    expect(readmeLinks).toBeGreaterThan(10);
    expect(broken).toEqual([]);
    // No script npm would run, or warn about, when an app installs the package.
    const installed = JSON.parse(
      readFileSync(join(app, "node_modules/tickwork/package.json"), "utf8"),
    ) as { scripts?: Record<string, string> };
    const lifecycle = ["preinstall", "install", "postinstall", "prepare"];
    expect(Object.keys(installed.scripts ?? {}).filter((s) => lifecycle.includes(s))).toEqual([]);
    // Source maps carry their sources: src/ is not shipped for them to point at.
    const map = JSON.parse(
      readFileSync(join(app, "node_modules/tickwork/dist/engine/broker.js.map"), "utf8"),
    ) as { sources: string[]; sourcesContent?: string[] };
    expect(map.sourcesContent).toHaveLength(map.sources.length);
    expect(map.sourcesContent?.[0]).toContain("export class Broker");
    console.log(
      `tarball: ${packed.files.length} files, ${(packed.size / 1024).toFixed(1)} kB packed, ` +
        `${(packed.unpackedSize / 1024).toFixed(1)} kB unpacked`,
    );
  });

  it("plain node imports every entry in package.json exports", async () => {
    const { code, out } = await runNode(app, ["import-all.mjs"]);
    expect(out).not.toMatch(/Error/);
    expect(code).toBe(0);
    expect(out.trim().split("\n")).toHaveLength(EXPORTS.length);
  });

  it("strict tsc passes with nodenext and with bundler resolution (skipLibCheck: false)", async () => {
    const nodenext = await runRepoBin("tsc", ["-p", "tsconfig.json"], app);
    expect(nodenext.stdout + nodenext.stderr).toBe("");
    expect(nodenext.code).toBe(0);
    const bundler = await runRepoBin("tsc", ["-p", "tsconfig.bundler.json"], app);
    expect(bundler.stdout + bundler.stderr).toBe("");
    expect(bundler.code).toBe(0);
    const nodom = await runRepoBin("tsc", ["-p", "nodom/tsconfig.json"], app);
    expect(nodom.stdout + nodom.stderr).toBe("");
    expect(nodom.code).toBe(0);
    // Two full type-checks of a fresh app: on a loaded 2-core machine this takes well over 30 s.
  }, 240_000);

  it("a misspelt handler or a wrong input does not compile, through the engine and the client", async () => {
    writeFiles(app, {
      "mistakes/src/mistakes.ts": MISTAKES,
      "mistakes/src/tickwork/handlers.ts": readmeFiles()["src/tickwork/handlers.ts"]!,
      "mistakes/src/tickwork/webhooks.ts": readmeFiles()["src/tickwork/webhooks.ts"]!,
      "mistakes/package.json": '{ "type": "module" }\n',
      // The declaration files were checked by the test above; here only the app's errors count.
      "mistakes/tsconfig.json": tsconfig("bundler", {
        typeRoots: ["../node_modules/@types"],
        skipLibCheck: true,
      }),
    });
    const { code, stdout } = await runRepoBin("tsc", ["-p", "mistakes/tsconfig.json"], app);
    expect(code).not.toBe(0);
    const lines = [...stdout.matchAll(/mistakes\.ts\((\d+),\d+\): error TS\d+/g)].map((m) =>
      Number(m[1]),
    );
    expect([...new Set(lines)].sort((a, b) => a - b)).toEqual(MISTAKE_LINES);
    expect(stdout).toContain('"email.sned"');
  }, 120_000);

  it("runs the README's development embedding: submit a job, read its result", async () => {
    const { code, out } = await runNode(app, ["out/src/dev.js"]);
    expect(out).toContain("sent: 'ada@example.com'");
    expect(out).toContain("subject: 'Hello'");
    expect(code).toBe(0);
  });

  describe("the README's production embedding: Redis, QStash, served, ticked, shut down", () => {
    let qstash: QStashDouble;
    const prefix = `consumer${Math.random().toString(36).slice(2, 8)}`;

    beforeAll(async () => {
      qstash = await startQStashDouble({ backoffScale: 0.001 });
    });
    afterAll(async () => {
      await qstash?.close();
      await deletePrefix(prefix);
    });

    it("answers the README's client, runs the job, and exits 0 on SIGTERM", async () => {
      // It must know its public URL before it starts: a port taken meanwhile, another one.
      const { server, origin } = await onFreePort(/EADDRINUSE/, async (port) => {
        const origin = `http://127.0.0.1:${port}`;
        const server = await startNode(
          app,
          ["out/src/server.js"],
          {
            PORT: String(port),
            PUBLIC_URL: origin,
            REDIS_URL,
            TICKWORK_PREFIX: prefix,
            QSTASH_URL: qstash.url,
            QSTASH_TOKEN: qstash.token,
            QSTASH_CURRENT_SIGNING_KEY: qstash.currentSigningKey,
            QSTASH_NEXT_SIGNING_KEY: qstash.nextSigningKey,
            TICKWORK_API_KEY: "consumer-key",
          },
          /listening on http/,
        );
        return { server, origin };
      });
      try {
        expect(await (await fetch(origin)).text()).toBe("my app");
        const client = await runNode(app, ["out/src/client.js"], {
          TICKWORK_URL: `${origin}/api/tickwork`,
          TICKWORK_API_KEY: "consumer-key",
        });
        expect(client.out).toContain("sent: 'a@example.com'");
        expect(client.code).toBe(0);
        const redis = new Redis(REDIS_URL);
        try {
          expect(await redis.exists(`{${prefix}}:s:flush`)).toBe(1);
        } finally {
          redis.disconnect();
        }
      } finally {
        server.child.kill("SIGTERM");
      }
      expect(await server.exited).toBe(0);
      expect(server.output()).toContain("SIGTERM, shutting down");
    });
  });

  it("a Worker importing tickwork/cloudflare bundles with wrangler", async () => {
    const size = await bundleWorker(app);
    console.log(`Worker bundle: ${size.kib} KiB, ${size.gzipKib} KiB gzip`);
    expect(size.kib).toBeGreaterThan(0);
  });

  it("the browser client bundle holds no handler code and no zod", async () => {
    const { build } = (await import("esbuild")) as typeof import("esbuild");
    const result = await build({
      stdin: {
        contents: 'import { createClient } from "tickwork/client"; console.log(createClient);',
        resolveDir: app,
        loader: "ts",
      },
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      minify: true,
      metafile: true,
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((path) => /node_modules\/(zod|hono|cron-parser)\//.test(path))).toEqual(
      [],
    );
    console.log(
      `client bundle: ${(result.outputFiles[0]!.contents.byteLength / 1024).toFixed(1)} KiB`,
    );
  });

  it("publint and arethetypeswrong report no problems", async () => {
    const publint = await runRepoBin("publint", ["run", packed.tarball, "--strict"], work);
    expect(publint.stdout + publint.stderr).toContain("All good");
    expect(publint.code).toBe(0);
    // ESM only, like the package: require() and node10 resolution are out of scope.
    const attw = await runRepoBin("attw", [packed.tarball, "--profile", "esm-only"], work);
    const flagged = (attw.stdout + attw.stderr)
      .split("\n")
      .filter((line) => /❌|💀|⚠️/.test(line) && !line.includes("(ignored"));
    expect(flagged).toEqual([]);
    expect(attw.code).toBe(0);
  });

  describe("with only the required peers (hono, zod)", () => {
    it("loads the engine, stores, transports, HTTP app, client and Node entries", async () => {
      writeFiles(minimal, {
        "load.mjs": `for (const name of ["tickwork", "tickwork/memory", "tickwork/local", "tickwork/http", "tickwork/client", "tickwork/node", "tickwork/config", "tickwork/core", "tickwork/store"]) await import(name);
console.log("loaded");
`,
      });
      const { code, out } = await runNode(minimal, ["load.mjs"]);
      expect(out.trim()).toBe("loaded");
      expect(code).toBe(0);
    });

    it("strict tsc passes for every entry that does not name an optional client", async () => {
      // tickwork/qstash is QStash's SDK at work, tickwork/redis-rest serves ioredis, and the
      // Cloudflare Worker bundles its QStash transport (README: its install line names the SDK).
      const needsClient = new Set(["./qstash", "./redis-rest", "./cloudflare"]);
      const entries = EXPORTS.filter((entry) => !needsClient.has(entry));
      writeFiles(minimal, {
        "src/entries.ts": `${entries.map((entry, i) => `import * as entry${i} from "${specifier(entry)}";`).join("\n")}
export const entries = [${entries.map((_, i) => `entry${i}`).join(", ")}];
`,
        "tsconfig.json": tsconfig("nodenext", { noEmit: true }),
      });
      const { code, stdout, stderr } = await runRepoBin("tsc", ["-p", "tsconfig.json"], minimal);
      expect(stdout + stderr).toBe("");
      expect(code).toBe(0);
    }, 120_000);

    it("names the package to install when the configuration needs one", async () => {
      writeFiles(minimal, {
        "start.mjs": `import { startServer } from "tickwork/node";
const attempts = [
  { handlers: {}, dev: true, port: 0, print: false },
  { handlers: {}, dev: true, port: 0, print: false, redisUrl: "redis://127.0.0.1:6379" },
];
for (const options of attempts) {
  try {
    await startServer(options);
    console.log("started");
  } catch (error) {
    console.log(error.name + ": " + error.message);
  }
}
`,
      });
      const { out } = await runNode(minimal, ["start.mjs"]);
      expect(out).toContain(
        'StartError: serving tickwork on Node needs the npm package "@hono/node-server", which is not installed: npm install @hono/node-server',
      );
      expect(out).toContain('needs the npm package "ioredis"');
      expect(out).not.toContain("started");
    });
  });
});
