/**
 * `tickwork start` as a self-hosted user runs it: configuration refused at start (a database
 * Redis does not have, or one that is not a number; an empty option value; `--handlers` naming a
 * directory), and a Redis that stops answering (at start, and during a SIGTERM's shutdown), and a
 * second SIGTERM during the shutdown, and a SIGTERM during the start (its node registration under
 * way). Each child runs the compiled CLI (`bin/tickwork.js`, i.e.
 * `dist/`) with a clean environment; readiness is the banner's first line, an end is the child's
 * `close`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Redis } from "ioredis";
import { afterAll, describe, expect, test } from "vitest";
import { type PrivateRedis, startRedisServer } from "../support/redis-server.ts";
import { cleanEnv, deletePrefix, REDIS_URL, ROOT, randomPrefix } from "./server.ts";

interface Child {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code once the child exited and its output is read. */
  closed: Promise<number | null>;
  /** Resolves when `pattern` appears in the output; rejects if it exits or after `ms`. */
  until(pattern: RegExp, ms?: number): Promise<void>;
  kill(): void;
}

const children: Child[] = [];
const prefixes: string[] = [];
const redises: PrivateRedis[] = [];
afterAll(async () => {
  for (const c of children) c.kill();
  await Promise.all(children.map((c) => c.closed));
  for (const r of redises) {
    if (r.child.pid) process.kill(r.child.pid, "SIGCONT");
    await r.stop();
  }
  await Promise.all(prefixes.map(deletePrefix));
});

function tickwork(args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, ["bin/tickwork.js", ...args], {
    cwd: ROOT,
    env: cleanEnv({ PORT: "0", ...env }),
    detached: true,
  });
  let out = "";
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const closed = new Promise<number | null>((resolve) => child.once("close", resolve));
  const c: Child = {
    child,
    output: () => out,
    closed,
    until(pattern, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no ${pattern} within ${ms} ms; output:\n${out}`)),
          ms,
        );
        const check = () => {
          if (pattern.test(out)) {
            clearTimeout(timer);
            listeners.delete(check);
            resolve();
          }
        };
        listeners.add(check);
        check();
        void closed.then((code) => {
          clearTimeout(timer);
          if (!pattern.test(out)) reject(new Error(`exited (${code}) before ${pattern}:\n${out}`));
        });
      });
    },
    kill() {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone
      }
    },
  };
  children.push(c);
  return c;
}

/** The child's exit code, or "still running after <ms>" when it has not exited by then. */
async function exitWithin(c: Child, ms: number): Promise<number | null | string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`still running after ${ms} ms`), ms);
  });
  const result = await Promise.race([c.closed, late]);
  clearTimeout(timer);
  return result;
}

const BANNER = /tickwork server listening on /;

describe.concurrent("tickwork start: configuration refused at start", () => {
  test("REDIS_URL naming a database Redis does not have is refused, not silently db 0", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    const c = tickwork(["start", "--host", "127.0.0.1"], {
      REDIS_URL: `${REDIS_URL}/99`,
      TICKWORK_PREFIX: prefix,
      TICKWORK_API_KEY: "k",
    });
    const code = await Promise.race([c.closed, c.until(BANNER).then(() => "started")]);
    c.kill();
    await c.closed;
    // What it did instead: its keys are in database 0.
    const db0 = new Redis(REDIS_URL);
    const [, keys] = await db0.scan("0", "MATCH", `{${prefix}}:*`, "COUNT", 10_000);
    db0.disconnect();
    expect({ code, keysInDb0: keys.length }).toEqual({ code: 1, keysInDb0: 0 });
    expect(c.output()).toMatch(/^tickwork: .*database/m);
  });

  test("REDIS_URL with a database that is not a number: one line, no stack", async () => {
    const c = tickwork(["start"], { REDIS_URL: `${REDIS_URL}/abc`, TICKWORK_API_KEY: "k" });
    const code = await exitWithin(c, 45_000);
    expect(code).toBe(2); // a configuration refused (a Redis that refuses the database: 1)
    expect(c.output()).toMatch(/^tickwork: /m);
    expect(c.output()).not.toContain("    at ");
  });

  test("an empty option value is refused, not replaced by the default over the variable", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    // e.g. `tickwork start --prefix "$TW_PREFIX"` with the shell variable unset.
    const c = tickwork(["start", "--host", "127.0.0.1", "--prefix", ""], {
      REDIS_URL,
      TICKWORK_PREFIX: prefix,
      TICKWORK_API_KEY: "k",
    });
    const result = await Promise.race([c.closed, c.until(BANNER).then(() => "started")]);
    await c.until(/key prefix/).catch(() => {});
    c.kill();
    await c.closed;
    const shown = /key prefix "([^"]*)"/.exec(c.output())?.[1];
    expect({ result, shown }).toEqual({ result: 2, shown: undefined });
    expect(c.output()).toMatch(/^tickwork: .*--prefix/m);
  });

  test("--handlers naming a directory (or empty): a usage error, no stack", async () => {
    for (const file of ["src", ""]) {
      const c = tickwork(["start", "--handlers", file], { REDIS_URL, TICKWORK_API_KEY: "k" });
      const code = await exitWithin(c, 45_000);
      expect(code, JSON.stringify(file)).toBe(2);
      expect(c.output()).toMatch(/^tickwork: /m);
      expect(c.output()).not.toContain("    at ");
    }
  });
});

describe.concurrent("tickwork start: Redis that stops answering", () => {
  test("a Redis that accepts connections but never answers fails the start within the check's 5 s", async () => {
    const redis = await startRedisServer();
    redises.push(redis);
    process.kill(redis.child.pid as number, "SIGSTOP");
    const c = tickwork(["start"], { REDIS_URL: redis.url, TICKWORK_API_KEY: "k" });
    // The check gives up after 5 s; the rest of the limit is the CLI's own start on a busy machine.
    const code = await exitWithin(c, 45_000);
    expect(code).toBe(1);
    expect(c.output()).toMatch(/^tickwork: .*Redis/m);
  });

  test("SIGTERM while Redis does not answer still ends the process (bounded shutdown)", async () => {
    const redis = await startRedisServer();
    redises.push(redis);
    const c = tickwork(["start", "--host", "127.0.0.1"], {
      REDIS_URL: redis.url,
      TICKWORK_API_KEY: "k",
    });
    await c.until(/answers 200 with the same job\./);
    process.kill(redis.child.pid as number, "SIGSTOP");
    // The tick timer (every 1 s) and the heartbeat now wait on Redis for good.
    process.kill(c.child.pid as number, "SIGTERM");
    await c.until(/SIGTERM, shutting down/);
    // The drain's 10 s, then bounded steps: well inside Kubernetes' default 30 s grace period.
    const code = await exitWithin(c, 45_000);
    expect(code).toBe(0);
  }, 90_000);
});

describe.concurrent("tickwork start: Redis that stops taking writes after the first check", () => {
  test("writes paused (as in a failover): the start fails within 5 s of its step, one line", async () => {
    const redis = await startRedisServer();
    redises.push(redis);
    const admin = new Redis(redis.url);
    // PING and SELECT still answer; XGROUP CREATE and the node's heartbeat wait.
    await admin.call("CLIENT", "PAUSE", "60000", "WRITE");
    admin.disconnect();
    const c = tickwork(["start", "--host", "127.0.0.1"], {
      REDIS_URL: redis.url,
      TICKWORK_API_KEY: "k",
    });
    const code = await exitWithin(c, 45_000);
    expect(code, c.output()).toBe(1);
    expect(c.output()).toMatch(/^tickwork: Redis at .* did not answer within 5000 ms while /m);
    expect(c.output()).not.toContain("    at ");
    expect(c.output()).not.toMatch(/listening on/);
    // Undoing the failed start has a deadline of its own: steps waiting on the paused Redis are
    // cut after 1 s in all (they were given the whole 10 s shutdown deadline, the failure
    // reported 16 s in).
    const waited = [...c.output().matchAll(/"waitedMs":(\d+)/g)].map((m) => Number(m[1]));
    expect(Math.max(0, ...waited), c.output()).toBeLessThanOrEqual(1_000);
  }, 60_000);

  test("startServer that failed so leaves nothing running once Redis answers again: the process ends by itself", async () => {
    // Not the CLI (it exits at once): code calling startServer, whose process ends only when
    // nothing is left running. The worker's step times out (Streams), or the node's (local).
    const script = (transport: string) => `
      import { startServer } from "tickwork/node";
      try {
        await startServer({ handlers: {}, redisUrl: process.env.REDIS_URL, transport: "${transport}",
          dev: false, apiKeys: ["k"], port: 0, signals: false, print: false });
        console.log("STARTED");
      } catch (error) {
        console.log("FAILED " + error.message);
      }`;
    const runs = ["streams", "local"].map(async (transport) => {
      const redis = await startRedisServer();
      redises.push(redis);
      const admin = new Redis(redis.url);
      // Writes wait until the start has reported its failure (its step timed out after 5 s),
      // then go through: the step that timed out completes. Unpaused on the child's line, not
      // after a fixed time: a start slowed past the pause's end would have succeeded.
      await admin.call("CLIENT", "PAUSE", "60000", "WRITE");
      const child = spawn(process.execPath, ["--input-type=module", "-e", script(transport)], {
        cwd: ROOT,
        env: cleanEnv({ REDIS_URL: redis.url }),
      });
      let out = "";
      const reported = new Promise<void>((resolve) => {
        const read = (chunk: Buffer) => {
          out += chunk.toString();
          if (/FAILED|STARTED/.test(out)) resolve();
        };
        child.stdout.on("data", read);
        child.stderr.on("data", read);
        child.once("close", () => resolve());
      });
      await reported;
      await admin.call("CLIENT", "UNPAUSE");
      admin.disconnect();
      const ended = await Promise.race([
        new Promise((resolve) => child.once("close", () => resolve("ended"))),
        new Promise((resolve) => setTimeout(() => resolve("still running"), 45_000)),
      ]);
      child.kill("SIGKILL");
      return { transport, ended, failed: /FAILED .*did not answer within 5000 ms/.test(out), out };
    });
    for (const run of await Promise.all(runs)) {
      expect({ ...run, out: undefined }, run.out).toEqual({
        transport: run.transport,
        ended: "ended",
        failed: true,
        out: undefined,
      });
    }
  }, 90_000);

  test("a read-only replica: refused at start, one line naming it", async () => {
    const primary = await startRedisServer();
    redises.push(primary);
    const replica = await startRedisServer(20_000, [
      "--replicaof",
      "127.0.0.1",
      String(primary.port),
    ]);
    redises.push(replica);
    for (const role of ["all", "api"]) {
      const c = tickwork(["start", "--host", "127.0.0.1", "--role", role], {
        REDIS_URL: replica.url,
        TICKWORK_API_KEY: "k",
      });
      const code = await exitWithin(c, 45_000);
      expect(code, c.output()).toBe(1);
      expect(c.output()).toMatch(/^tickwork: .*replica/m);
      expect(c.output()).not.toContain("    at ");
    }
  }, 60_000);
});

describe.concurrent("tickwork start: signals", () => {
  /** A started server on a prefix of its own, and a client of it. */
  async function startedWithClient() {
    const { createClient } = await import("../../src/client/index.ts");
    const prefix = randomPrefix();
    prefixes.push(prefix);
    const c = tickwork(["start", "--host", "127.0.0.1"], {
      REDIS_URL,
      TICKWORK_PREFIX: prefix,
      TICKWORK_API_KEY: "k",
    });
    await c.until(/answers 200/);
    const url = /listening on (http:\/\/\S+)/.exec(c.output())?.[1] as string;
    return { c, tw: createClient({ url, apiKey: "k" }) };
  }

  test("a second SIGTERM during the shutdown exits at once (130, with its note)", async () => {
    const { c, tw } = await startedWithClient();
    // A long job: the worker's part of the shutdown waits up to 9.5 s for it.
    await tw.jobs.submit({
      handler: "sleep",
      input: { ms: 20_000 },
    });
    process.kill(c.child.pid as number, "SIGTERM");
    await c.until(/SIGTERM, shutting down/);
    process.kill(c.child.pid as number, "SIGTERM");
    const second = await exitWithin(c, 30_000);
    expect(second, c.output()).toBe(130);
    expect(c.output()).toContain("SIGTERM again, exiting now");
  }, 60_000);

  test("a job still running at the shutdown's deadline is left pending, and a line says so", async () => {
    const { c, tw } = await startedWithClient();
    const job = await tw.jobs.submit({ handler: "sleep", input: { ms: 30_000 } });
    while ((await job.status()).status !== "running") {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    process.kill(c.child.pid as number, "SIGTERM");
    expect(await exitWithin(c, 30_000), c.output()).toBe(0);
    expect(c.output()).toMatch(/shutdown left jobs running.*"left":1/);
  }, 60_000);
});

/**
 * A proxy in front of the shared Redis that lets a client's first write whose text matches `hold`
 * reach Redis and holds every reply on that connection from then on, until `release()`: a command
 * Redis has carried out whose answer is still on its way.
 */
async function holdingProxy(hold: (text: string) => boolean) {
  const { createServer, connect } = await import("node:net");
  let onHeld: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    onHeld = resolve;
  });
  const releases: Array<() => void> = [];
  let released = false;
  const sockets = new Set<import("node:net").Socket>();
  const server = createServer((client) => {
    const upstream = connect(6379, "127.0.0.1");
    sockets.add(client).add(upstream);
    let replies: Buffer[] | undefined;
    client.on("data", (chunk: Buffer) => {
      if (!replies && !released && hold(chunk.toString("latin1"))) {
        replies = [];
        releases.push(() => {
          for (const reply of replies ?? []) client.write(reply);
          replies = undefined;
        });
        onHeld();
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (replies) replies.push(chunk);
      else client.write(chunk);
    });
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.end());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as import("node:net").AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    held,
    release() {
      released = true;
      for (const release of releases.splice(0)) release();
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe.concurrent("tickwork start: a SIGTERM during the start", () => {
  test("while the node's first heartbeat is under way: no banner after it, no node left registered, exit 0", async () => {
    const prefix = randomPrefix();
    prefixes.push(prefix);
    const proxy = await holdingProxy(
      (text) => text.includes("heartbeatNode") && !/FUNCTION|LOAD/i.test(text),
    );
    try {
      const c = tickwork(["start", "--host", "127.0.0.1"], {
        REDIS_URL: proxy.url,
        TICKWORK_PREFIX: prefix,
        TICKWORK_API_KEY: "k",
      });
      await proxy.held;
      process.kill(c.child.pid as number, "SIGTERM");
      await c.until(/SIGTERM, shutting down/);
      proxy.release();
      expect(await exitWithin(c, 30_000), c.output()).toBe(0);
      expect(c.output()).not.toMatch(BANNER);
      const redis = new Redis(REDIS_URL);
      try {
        // The node registry (src/store/redis/keys.ts `nodes`): the node left it at the shutdown.
        expect(await redis.hkeys(`{${prefix}}:nodes`), c.output()).toEqual([]);
      } finally {
        redis.disconnect();
      }
    } finally {
      await proxy.close();
    }
  }, 60_000);
});
