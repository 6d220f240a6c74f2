import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, vi } from "vitest";
import { buildScripts, generate, outputFile, readsOnly } from "../../../scripts/gen-lua.ts";
import { HISTOGRAM_BOUNDS_MS } from "../port.ts";
import { luaJson } from "./codec.ts";
import { ErrorCode } from "./errors.ts";
import { keys } from "./keys.ts";
import { fromIoredis, type LuaScript, type ScriptClient, safeEval } from "./script.ts";
import { scripts } from "./scripts.generated.ts";

const redis = new Redis("redis://127.0.0.1:6379");
afterAll(() => redis.disconnect());

const all = Object.values(scripts) as LuaScript[];
const includeSource = (name: string) =>
  readFileSync(new URL(`./lua/includes/${name}.lua`, import.meta.url), "utf8");

describe("generated scripts", () => {
  it("are up to date with lua/ (npm run gen)", () => {
    expect(readFileSync(outputFile, "utf8")).toBe(generate());
    expect(buildScripts().map((s) => s.name)).toEqual(all.map((s) => s.name));
  });

  it.each(all.map((s) => [s.name, s] as const))(
    "%s: sha1 matches its source and SCRIPT LOAD",
    async (_, s) => {
      expect(s.sha1).toBe(createHash("sha1").update(s.source).digest("hex"));
      expect(await redis.script("LOAD", s.source)).toBe(s.sha1);
    },
  );

  it("start with a header naming Input and Output, and inline every include", () => {
    for (const s of all) {
      expect(s.source.startsWith("--[[")).toBe(true);
      expect(s.source).toMatch(/Input/);
      expect(s.source).toMatch(/Output/);
      expect(s.source).not.toMatch(/--@include/);
    }
  });

  it("build every per-id key exactly as keys.ts does", async () => {
    const k = keys("p:x");
    const probe = `${includeSource("keys")}
return { jobKey(KEYS[1], ARGV[1]), scheduleKey(KEYS[1], ARGV[1]), scheduleRunningKey(KEYS[1], ARGV[1]),
  runsKey(KEYS[1], ARGV[1]), idempotencyKey(KEYS[1], ARGV[2], ARGV[3]), quotaKey(KEYS[1], ARGV[4]),
  jobsKey(KEYS[1], ARGV[2]), dlqKey(KEYS[1], ARGV[2]), schedulesKey(KEYS[1], ARGV[2]),
  limitKey(KEYS[1], ARGV[5]), rateKey(KEYS[1], ARGV[5]), hookLogKey(KEYS[1], ARGV[3]),
  hookCountsKey(KEYS[1]) }`;
    const id = "a:b@1700000000000";
    const quota = "submit:tenant-é:1"; // multi-byte: the length prefix counts UTF-8 bytes
    const limit = "email.send=8:tenant-é:42"; // multi-byte, as above
    const built = await redis.eval(probe, 1, k.root, id, "tenant-ü", "order:7", quota, limit);
    expect(built).toEqual([
      k.job(id),
      k.schedule(id),
      k.scheduleRunning(id),
      k.runs(id),
      k.idempotency("tenant-ü", "order:7"),
      k.quota(quota),
      k.jobs("tenant-ü"),
      k.dlq("tenant-ü"),
      k.schedules("tenant-ü"),
      k.limit(limit),
      k.rate(limit),
      k.hookLog("order:7"),
      k.hookCounts,
    ]);
  });

  it("bucket histograms by the port's HISTOGRAM_BOUNDS_MS", async () => {
    const bounds = await redis.eval(`${includeSource("metrics")}\nreturn HISTOGRAM_BOUNDS`, 0);
    expect(bounds).toEqual([...HISTOGRAM_BOUNDS_MS]);
  });

  it("write a metrics batch as its operations give, applied in order to the stored or loaded values and clamped at 0", async () => {
    // The batch keeps a sum per added field and the steps per averaged one (include "metrics"):
    // this model applies every operation in order, as the include promises.
    const key = `metrics-test:${process.pid}`;
    const probe = `${includeSource("time")}\n${includeSource("metrics")}
local ops, loaded = cjson.decode(ARGV[1]), cjson.decode(ARGV[2])
local known = nil
if #loaded > 0 then
  known = metricsLoad(KEYS[1], loaded)
end
local m = newMetrics()
for _, op in ipairs(ops) do
  if op[1] == 'add' then
    mAdd(m, op[2], op[3])
  elseif op[1] == 'avg' then
    mAverage(m, op[2], op[3])
  else
    mObserve(m, op[2], op[3])
  end
end
metricsFlush(KEYS[1], m, known)
return redis.call('HGETALL', KEYS[1])`;
    const added = ["t:a", "g:b", "g:c"];
    const averaged = ["avg:x", "avg:y"];
    const op = fc.oneof(
      fc.tuple(fc.constant("add"), fc.constantFrom(...added), fc.integer({ min: -5, max: 5 })),
      fc.tuple(
        fc.constant("avg"),
        fc.constantFrom(...averaged),
        fc.double({ min: 0, max: 1000, noNaN: true }),
      ),
      fc.tuple(fc.constant("obs"), fc.constant("lag"), fc.integer({ min: 0, max: 400_000 })),
    );
    const stored = fc.record(
      {
        "t:a": fc.integer({ min: 0, max: 20 }),
        "g:b": fc.integer({ min: 0, max: 20 }),
        "avg:x": fc.double({ min: 0, max: 1000, noNaN: true }),
        "lag:3": fc.integer({ min: 0, max: 20 }),
      },
      { requiredKeys: [] },
    );
    const fields = [...added, ...averaged, "lag:3", "lag:sum"];
    await fc.assert(
      fc.asyncProperty(
        stored,
        fc.array(op, { maxLength: 12 }),
        fc.uniqueArray(fc.constantFrom(...fields)),
        async (initial, ops, loaded) => {
          await redis.del(key);
          const entries = Object.entries(initial) as [string, number][];
          if (entries.length > 0) await redis.hset(key, ...entries.flat().map(String));
          const reply = (await redis.eval(
            probe,
            1,
            key,
            JSON.stringify(ops),
            JSON.stringify(loaded),
          )) as string[];
          const got: Record<string, number> = {};
          for (let i = 0; i < reply.length; i += 2) got[reply[i] as string] = Number(reply[i + 1]);

          const values = new Map<string, number>();
          const read = (f: string) => values.get(f) ?? (initial as Record<string, number>)[f] ?? 0;
          const add = (f: string, n: number) => {
            if (n !== 0) values.set(f, read(f) + n);
          };
          for (const [kind, field, x] of ops) {
            if (kind === "add") add(field, x);
            else if (kind === "avg") values.set(field, read(field) + 0.1 * (x - read(field)));
            else {
              const i = HISTOGRAM_BOUNDS_MS.findIndex((bound) => x <= bound);
              add(`${field}:${i < 0 ? HISTOGRAM_BOUNDS_MS.length : i}`, 1);
              add(`${field}:sum`, x);
            }
          }
          const expected: Record<string, number> = { ...initial };
          for (const [f, v] of values) expected[f] = Math.max(0, v);
          expect(got).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
    await redis.del(key);
  });

  it("are read-only (a no-writes function) only when every call names a command that never writes", () => {
    expect(readsOnly("return redis.call('HGETALL', KEYS[1])")).toBe(true);
    expect(
      readsOnly("local t = redis.call( 'time' )\nreturn redis.call('ZRANGE', KEYS[1], 0, -1)"),
    ).toBe(true);
    expect(readsOnly("redis.call('HGET', KEYS[1], 'a')\nredis.call('HSET', KEYS[1], 'a', 1)")).toBe(
      false,
    );
    expect(readsOnly("return redis.pcall('DEL', KEYS[1])")).toBe(false);
    // A computed command name may be anything.
    expect(readsOnly("local cmd = 'ZREM'\nreturn redis.call(cmd, KEYS[1], 'm')")).toBe(false);
    expect(readsOnly('return redis.call("GET", KEYS[1])')).toBe(false);
    // Through pcall too: a write called so is a write (it was not looked at).
    expect(readsOnly("local ok = pcall(redis.call, 'SET', KEYS[1], 1)")).toBe(false);
    expect(readsOnly("local ok, s = pcall(redis.call, 'XPENDING', KEYS[1], 'g')")).toBe(true);
    expect(readsOnly("return redis.call('XINFO', 'GROUPS', KEYS[1])")).toBe(true);
    // A space before the parenthesis, or the function kept under another name.
    expect(readsOnly("return redis.call ('SET', KEYS[1], 1)")).toBe(false);
    expect(readsOnly("return redis.call ('GET', KEYS[1])")).toBe(true);
    expect(readsOnly("local c = redis.call\nreturn c('SET', KEYS[1], 1)")).toBe(false);
    const flagged = Object.values(scripts)
      .filter((s) => (s as LuaScript).readOnly)
      .map((s) => s.name);
    expect(flagged).toEqual(
      expect.arrayContaining(["getJob", "getSchedule", "readLogs", "now", "streamStats"]),
    );
    expect(flagged).not.toContain("submitJob");
  });

  it("report the error codes of the ErrorCode enum", async () => {
    const codes = (await redis.eval(
      `${includeSource("errors")}\nreturn { LEASE_LOST, JOB_NOT_FOUND, JOB_NOT_DEAD }`,
      0,
    )) as number[];
    expect(codes).toEqual([ErrorCode.LeaseLost, ErrorCode.JobNotFound, ErrorCode.JobNotDead]);
  });
});

describe("safeEval", () => {
  it("falls back to EVAL on NOSCRIPT, which caches the script", async () => {
    const unique = `${Date.now()}-${Math.random()}`;
    const source = `-- ${unique}\nreturn ARGV[1] .. KEYS[1]`;
    const script: LuaScript = {
      name: "probe",
      numberOfKeys: 1,
      source,
      sha1: createHash("sha1").update(source).digest("hex"),
      bodyStart: 0,
    };
    expect(await redis.script("EXISTS", script.sha1)).toEqual([0]);
    const inner = fromIoredis(redis);
    const client: ScriptClient = { evalsha: vi.fn(inner.evalsha), eval: vi.fn(inner.eval) };

    expect(await safeEval(client, script, ["k"], ["v"])).toBe("vk");
    expect(client.evalsha).toHaveBeenCalledTimes(1);
    expect(client.eval).toHaveBeenCalledTimes(1);
    expect(await redis.script("EXISTS", script.sha1)).toEqual([1]);

    expect(await safeEval(client, script, ["k"], [2])).toBe("2k");
    expect(client.evalsha).toHaveBeenCalledTimes(2);
    expect(client.eval).toHaveBeenCalledTimes(1);
  });

  it("matches NOSCRIPT case-insensitively and rethrows other errors", async () => {
    const script: LuaScript = {
      name: "x",
      numberOfKeys: 0,
      source: "return 1",
      sha1: "0".repeat(40),
      bodyStart: 0,
    };
    const upstashLike: ScriptClient = {
      evalsha: async () => {
        throw new Error("noscript No matching script. Please use EVAL., command was: [...]");
      },
      eval: async () => 1,
    };
    expect(await safeEval(upstashLike, script, [], [])).toBe(1);
    const failing: ScriptClient = {
      evalsha: async () => {
        throw new Error("WRONGTYPE Operation against a key holding the wrong kind of value");
      },
      eval: vi.fn(async () => 1),
    };
    await expect(safeEval(failing, script, [], [])).rejects.toThrow(/WRONGTYPE/);
    expect(failing.eval).not.toHaveBeenCalled();
  });
});

describe("luaJson", () => {
  it("spells a string as the scripts' cjson.encode does (the events filter matches that text)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({
          unit: fc.constantFrom("a", "/", "\\", '"', "\x7f", "\x01", "\n", "é", "€", "😀"),
        }),
        async (text) => {
          expect(luaJson(text)).toBe(await redis.eval("return cjson.encode(ARGV[1])", 0, text));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('numbers and their texts (include "time"), remembered across calls', () => {
  // As a function library, as the store loads its scripts: the include's locals (the last clock
  // reading, remembered conversions) live from one call to the next.
  const library = `#!lua name=tickwork_test_numbers
local KEYS, ARGV
${includeSource("time")}
redis.register_function('tickwork_test_numbers', function(keys, argv)
  ARGV = argv
  local now = nowMs()
  local out = { int(now) == string.format('%d', now) and 1 or 0 }
  for i = 2, #ARGV do
    local s = ARGV[i]
    if ARGV[1] == 'int' then
      local n = tonumber(s)
      local expected = (n == math.floor(n) and math.abs(n) < 9007199254740992)
        and string.format('%d', n) or string.format('%.0f', n)
      out[#out + 1] = int(n) == expected and 1 or 0
      out[#out + 1] = int(now) == string.format('%d', now) and 1 or 0
    else
      out[#out + 1] = tostring(numberOf(s)) == tostring(tonumber(s)) and 1 or 0
    end
  end
  return out
end)`;
  const call = (mode: string, args: string[]) =>
    redis.fcall("tickwork_test_numbers", 0, mode, ...args) as Promise<number[]>;

  it("numberOf answers tonumber for any text, past its bound and back; int() the text of any number, the clock's too", async () => {
    await redis.call("FUNCTION", "LOAD", "REPLACE", library);
    const numeric = fc.oneof(
      fc.integer({ min: -1e6, max: 1e6 }).map(String),
      fc.double().map(String),
      fc.constantFrom(
        "",
        " 5",
        "5 ",
        "0x1A",
        "1e300",
        "-0",
        "inf",
        "nan",
        "1764345600123",
        "a",
        "08",
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(numeric, { maxLength: 90 }), async (texts) => {
        const answers = await call("number", texts);
        expect(answers).toEqual(new Array(texts.length + 1).fill(1));
      }),
      { numRuns: 200 },
    );
    // Integers and fractions, small and beyond 2^53, each beside the clock's own reading.
    const numbers = fc.oneof(
      fc.integer().map(String),
      fc.double({ min: -1e18, max: 1e18, noNaN: true }).map(String),
      fc.constantFrom("0", "1764345600123", "9007199254740993", "-9007199254740993"),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(numbers, { maxLength: 20 }), async (texts) => {
        const answers = await call("int", texts);
        expect(answers).toEqual(new Array(2 * texts.length + 1).fill(1));
      }),
      { numRuns: 200 },
    );
    await redis.call("FUNCTION", "DELETE", "tickwork_test_numbers");
  });
});

describe('job texts built in Lua (include "job", include "events")', () => {
  const jobLua = ["time", "keys", "json", "job", "events"].map(includeSource).join("\n");
  const text = fc.string({
    unit: fc.constantFrom("a", "Z", "0", ":", "/", "\\", '"', "\x7f", "\x01", "\n", "é", "😀"),
  });
  /** A job hash's fields, as a script's table of them; `extra` fields beside (a log entry). */
  const jobFields = fc.record(
    {
      data: fc.constantFrom("{}", '{"id":"x","handler":"h","input":{"a":[1,{}]},"retries":3}'),
      createdAt: fc.constant("1764345600123"),
      runAt: fc.constant("1764345600456"),
      status: fc.constantFrom("queued", "running", "succeeded"),
      attempts: fc.constantFrom("0", "1", "12"),
      startedAt: fc.constant("1764345600500"),
      finishedAt: fc.constant("1764345600900"),
      result: fc.constantFrom("null", '{"ok":true}', '"/"'),
      error: fc.constant('{"name":"Error","message":"no"}'),
      attemptBase: fc.constant("2"),
      progress: fc.constantFrom("50", '{"step":"b"}'),
      cancelRequested: fc.constant("1"),
      node: text,
      refused: fc.constant('{"node":"n","reason":"r","at":1}'),
      handler: text,
      tenant: text,
      scheduleId: text,
    },
    { requiredKeys: ["data", "createdAt", "runAt", "status", "attempts"] },
  );

  it("answer the JobRecord, an event and an expiring-index entry exactly as their specs (and cjson) spell them", async () => {
    const probe = `${jobLua}
local job = cjson.decode(ARGV[1])
if job.progress then job.progressAt = '1764345600700' end
local id, before = ARGV[2], ARGV[3] ~= '' and ARGV[3] or nil
local cjsonMember = job.scheduleId and cjson.encode({ id, jobTenant(job), job.scheduleId })
  or cjson.encode({ id, jobTenant(job) })
return { jobJson(job, before), jobEvent('job.started', 1764345600999, id, job, ARGV[4] ~= '' and ARGV[4] or nil),
  expiringMember(id, job) == cjsonMember and 1 or 0 }`;
    await fc.assert(
      fc.asyncProperty(
        jobFields,
        text,
        fc.constantFrom("", '{"ok":', '{"kind":"run","attempt":3,"job":'),
        fc.constantFrom("", '"attempt":2'),
        async (fields, id, before, extra) => {
          const [recordText, event, sameMember] = (await redis.eval(
            probe,
            0,
            JSON.stringify(fields),
            id,
            before,
            extra,
          )) as [string, string, number];
          // The expiring index's member must be byte for byte what cjson made before: entries
          // written by an earlier version are removed by that text.
          expect(sameMember).toBe(1);
          const { data, progress, cancelRequested, handler, tenant, scheduleId, ...rest } = fields;
          const expected: Record<string, unknown> = { ...JSON.parse(data) };
          for (const [k, v] of Object.entries(rest)) {
            expected[k] = ["status", "node"].includes(k) ? v : JSON.parse(v);
          }
          if (progress !== undefined) {
            expected.progress = { value: JSON.parse(progress), at: 1764345600700 };
          }
          if (cancelRequested !== undefined) expected.cancelRequested = true;
          const answer = JSON.parse(recordText);
          if (before === "") expect(answer).toEqual(expected);
          else if (before === '{"ok":') expect(answer).toEqual({ ok: expected });
          else expect(answer).toEqual({ kind: "run", attempt: 3, job: expected });
          expect(JSON.parse(event)).toEqual({
            type: "job.started",
            at: 1764345600999,
            jobId: id,
            ...(handler !== undefined ? { handler } : {}),
            ...(tenant !== undefined ? { tenant } : {}),
            ...(scheduleId !== undefined ? { scheduleId } : {}),
            ...(extra ? { attempt: 2 } : {}),
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("read a whole job hash (HGETALL) as the job's fields by name (HMGET), beside its log entries", async () => {
    const probe = `${jobLua}
redis.call('DEL', KEYS[1])
local fields = cjson.decode(ARGV[1])
for k, v in pairs(fields) do redis.call('HSET', KEYS[1], k, v) end
redis.call('HSET', KEYS[1], 'logSeq', '1', 'log:1', '{"msg":"x"}')
local byName, whole = readJob(KEYS[1]), readWholeJob(KEYS[1])
redis.call('DEL', KEYS[1])
local missing = readWholeJob(KEYS[1]) == nil
if whole['log:1'] ~= '{"msg":"x"}' then return 'no log entry' end
whole.logSeq, whole['log:1'] = nil, nil
return { cjson.encode(byName), cjson.encode(whole), missing and 1 or 0 }`;
    const key = "scripts-test:{t}:j:whole";
    await fc.assert(
      fc.asyncProperty(jobFields, async (fields) => {
        const [byName, whole, missing] = (await redis.eval(
          probe,
          1,
          key,
          JSON.stringify(fields),
        )) as [string, string, number];
        expect(JSON.parse(whole)).toEqual(JSON.parse(byName));
        expect(JSON.parse(whole)).toEqual(fields);
        expect(missing).toBe(1);
      }),
      { numRuns: 100 },
    );
  });
});
