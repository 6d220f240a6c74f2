/**
 * @module
 * Scripts kept in one database. Redis runs a script in the caller's database, but `SELECT` inside
 * a script switches the script's own database until it returns (tested on Redis 7.0: the caller's
 * connection is back on its database afterwards, yet the script has read and written another). So
 * the bridge never sends a client's script as it is: it sends it behind a one-line prologue that
 * shadows, for the script's code, every way to reach `redis.call`:
 *
 * - `redis` becomes a copy of the real table whose `call` and `pcall` forward only the bridge's
 *   allowlisted data commands (the top-level allowlist without the script commands; `COPY … DB`
 *   refused): `select` in any case or spelling, computed or not (`'sel'..'ect'`,
 *   `string.char(…)`), `swapdb`, `flushall`, `move`… fail as "Command is not available";
 * - `_G` becomes a read-only view of the globals with that `redis`;
 * - `loadstring` and `load` (whose chunks would see the real globals) and the env and debug
 *   functions some Redis versions have (`getfenv`, `setfenv`, `debug`, …) are not reachable.
 *
 * The prologue is Lua on the script's first line (after a `#!lua` shebang line, which stays
 * first), so the script's line numbers are unchanged. It relies on Redis 7's read-only Lua globals:
 * on Redis 6 a script can replace `string.lower`, `type` or `redis.call` itself for every later
 * script, so the bridge runs no script there (it checks `INFO server` and tries to write a global,
 * once, before the first script).
 *
 * Why not refuse script texts that mention `select`? A text check is bypassed by computed names
 * (`redis.call(string.reverse('tceles'), 3)`), and refusing every computed command name would
 * refuse tickwork's own store scripts (`redis.call(cmd, key, …)` in `includes/members.lua`), while
 * Lua's own `select('#', …)` contains the word. The guard checks the name Redis will run, at the
 * moment it runs.
 *
 * Wrapping changes the script's SHA-1, so the bridge keeps the client's SHA-1 → the wrapped one
 * (both are what clients and Redis compute; no script text is kept): `SCRIPT LOAD` answers the
 * client's SHA-1, `EVALSHA` of it runs the wrapped script, `SCRIPT EXISTS` answers for it, and
 * Redis's error texts name it. A SHA-1 the bridge has not seen (a script loaded straight into Redis,
 * or before the bridge restarted) answers `NOSCRIPT`, which `@upstash/redis`'s `createScript` and
 * tickwork's `safeEval` answer with EVAL.
 */
import { createHash } from "node:crypto";
import { ReplyError } from "ioredis";
import {
  ALLOWED_COMMANDS,
  NOT_AVAILABLE_REASON,
  type RedisCommand,
  SCRIPT_COMMANDS,
} from "./commands.ts";
import type { BridgeRedis, Outcome } from "./execute.ts";

/** What Redis answers for an unknown SHA-1, word for word: clients look for `NOSCRIPT`. */
export const NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL.";

/** How many client SHA-1s the bridge remembers (least recently used first out): about 2 MB. */
const MAX_REMEMBERED_SCRIPTS = 10_000;

/**
 * A command ready for Redis, or answered without it. `finish` turns Redis's outcome into the
 * client's (the client's SHA-1 in place of the wrapped script's).
 */
export type Prepared =
  | { refused: string }
  | { answer: Outcome }
  | { wire: RedisCommand; finish?: (outcome: Outcome) => Outcome };

/**
 * The Lua prologue, one line ending in `;`. Builds the guarded `redis` from the real one (read
 * before the locals that shadow it exist: a `local` statement evaluates its right-hand side first).
 */
function prologue(): string {
  const names = [...ALLOWED_COMMANDS].filter((name) => !SCRIPT_COMMANDS.has(name)).sort();
  // A string constant, not a table: Lua builds constants once, when Redis compiles the script,
  // while a table constructor would run on every call (about 10 µs for 200 names).
  const allowed = ` ${names.join(" ")} `;
  const reason = NOT_AVAILABLE_REASON;
  const lua = `
local redis,_G,loadstring,load,getfenv,setfenv,debug,dofile,loadfile,require,module,package=(function(real,globals)
  local call,pcall,lower,upper,sub,find,gsub,type,error,select,setmetatable=real.call,real.pcall,string.lower,string.upper,string.sub,string.find,string.gsub,type,error,select,setmetatable
  local allowed="${allowed}"
  local function shown(name)
    if #name>64 then name=sub(name,1,64).."…" end
    name=gsub(name,"%c","?")
    return "ERR Command is not available: '"..upper(name).."'. ${reason}"
  end
  local function refusal(name,...)
    local kind=type(name)
    if kind~="string" and kind~="number" then return nil end
    local command=lower(name)
    if find(command,"[^%w_.]") or not find(allowed," "..command.." ",1,true) then return shown(command) end
    if command=="copy" then
      for i=3,select("#",...) do
        local arg=select(i,...)
        if (type(arg)=="string" or type(arg)=="number") and lower(arg)=="db" then return shown("copy … db") end
      end
    end
    return nil
  end
  local guarded=setmetatable({},{__index=real,__metatable=false})
  guarded.call=function(name,...)
    local refused=refusal(name,...)
    if refused then error({err=refused}) end
    return call(name,...)
  end
  guarded.pcall=function(name,...)
    local refused=refusal(name,...)
    if refused then return {err=refused} end
    return pcall(name,...)
  end
  local function unavailable(name)
    return function() error({err="ERR "..name.." is not available to scripts run through this REST bridge"}) end
  end
  local hidden={loadstring=unavailable("loadstring"),load=unavailable("load"),getfenv=false,setfenv=false,debug=false,dofile=false,loadfile=false,require=false,module=false,package=false}
  local view={}
  setmetatable(view,{__metatable=false,
    __index=function(_,key)
      if key=="redis" then return guarded end
      if key=="_G" then return view end
      local value=hidden[key]
      if value~=nil then return value or nil end
      return globals[key]
    end,
    __newindex=function() error("Attempt to modify a readonly table",2) end})
  return guarded,view,hidden.loadstring,hidden.load
end)(redis,_G);`;
  // One line: the script's own first line follows it, so its line numbers stay as they were.
  return lua
    .trim()
    .split("\n")
    .map((line) => line.trim())
    .join(" ");
}

let cachedPrologue: string | undefined;

/**
 * `body` behind the prologue: the script as the bridge sends it to Redis. A `#!` shebang line
 * (Redis 7 script flags) stays first; the prologue goes on the script's first line of code.
 *
 * @example
 * wrapScript("return redis.call('get', KEYS[1])"); // "local redis,_G,… = …; return redis.call(…)"
 */
export function wrapScript(body: string): string {
  cachedPrologue ??= prologue();
  if (!body.startsWith("#!")) return cachedPrologue + body;
  const end = body.indexOf("\n");
  // A shebang with no code after it runs nothing: nothing to guard.
  if (end === -1) return body;
  return body.slice(0, end + 1) + cachedPrologue + body.slice(end + 1);
}

function sha1(text: string): string {
  return createHash("sha1").update(text, "utf8").digest("hex");
}

/**
 * The bridge's scripts: wraps them, remembers client SHA-1 → wrapped SHA-1, turns the script
 * commands into their wrapped form, and checks once that Redis keeps Lua globals read-only.
 */
export class ScriptSandbox {
  readonly #wrapped = new Map<string, string>();
  #support: Promise<string | undefined> | undefined;

  /**
   * `undefined` when scripts may run on this Redis, else why not (as the client's error). Asks
   * `INFO server` once (again after a failure to reach Redis, which it rethrows).
   */
  supportsScripts(redis: BridgeRedis): Promise<string | undefined> {
    this.#support ??= checkVersion(redis).catch((error: unknown) => {
      this.#support = undefined;
      throw error;
    });
    return this.#support;
  }

  /**
   * `command` (a script command: EVAL, EVALSHA, their `_RO` forms, SCRIPT LOAD / EXISTS) as it
   * goes to Redis. Anything else comes back unchanged.
   */
  prepare(command: RedisCommand): Prepared {
    const [name, ...args] = command;
    const lower = name.toLowerCase();
    if (lower === "eval" || lower === "eval_ro") {
      if (args.length === 0) return { wire: command };
      const { sha, wrappedSha, wrapped } = this.#wrap(args[0] ?? "");
      return { wire: [name, wrapped, ...args.slice(1)], finish: naming(wrappedSha, sha) };
    }
    if (lower === "evalsha" || lower === "evalsha_ro") {
      if (args.length === 0) return { wire: command };
      const sha = (args[0] ?? "").toLowerCase();
      const wrappedSha = this.#lookup(sha);
      if (wrappedSha === undefined) return { answer: { error: NOSCRIPT } };
      return { wire: [name, wrappedSha, ...args.slice(1)], finish: naming(wrappedSha, sha) };
    }
    if (lower === "script") {
      const sub = args[0]?.toLowerCase();
      if (sub === "load" && args.length === 2) {
        const { sha, wrapped, wrappedSha } = this.#wrap(args[1] ?? "");
        return {
          wire: [name, args[0] ?? "", wrapped],
          finish: (outcome) =>
            "result" in outcome ? { result: sha } : naming(wrappedSha, sha)(outcome),
        };
      }
      if (sub === "exists") {
        // A SHA-1 the bridge has not wrapped is not there for its clients: "0" is no script's SHA-1.
        const shas = args.slice(1).map((sha) => this.#lookup(sha.toLowerCase()) ?? "0");
        return { wire: [name, args[0] ?? "", ...shas] };
      }
    }
    return { wire: command };
  }

  #wrap(body: string): { sha: string; wrappedSha: string; wrapped: string } {
    const wrapped = wrapScript(body);
    const sha = sha1(body);
    const wrappedSha = sha1(wrapped);
    this.#wrapped.delete(sha);
    this.#wrapped.set(sha, wrappedSha);
    if (this.#wrapped.size > MAX_REMEMBERED_SCRIPTS) {
      const oldest = this.#wrapped.keys().next().value;
      if (oldest !== undefined) this.#wrapped.delete(oldest);
    }
    return { sha, wrappedSha, wrapped };
  }

  #lookup(sha: string): string | undefined {
    const wrappedSha = this.#wrapped.get(sha);
    if (wrappedSha !== undefined) {
      this.#wrapped.delete(sha);
      this.#wrapped.set(sha, wrappedSha);
    }
    return wrappedSha;
  }
}

/** Whether `command` is one {@link ScriptSandbox.prepare} changes. */
export function isScriptCommand([name]: RedisCommand): boolean {
  return SCRIPT_COMMANDS.has(name.toLowerCase());
}

/** Redis's error texts name the wrapped script (`script: <sha1>`): name the client's instead. */
function naming(wrappedSha: string, sha: string): (outcome: Outcome) => Outcome {
  return (outcome) =>
    "error" in outcome ? { error: outcome.error.split(wrappedSha).join(sha) } : outcome;
}

/**
 * Whether this Redis keeps Lua's globals read-only, which the prologue relies on: Redis 7 or later
 * by `INFO server` (a Redis 6 could already have been given a poisoned `string.lower` by an
 * earlier script), and then by trying (once) to write one of them (a server that calls itself 7
 * without the protection). The probe writes `string.lower` with itself: harmless if it succeeds.
 */
async function checkVersion(redis: BridgeRedis): Promise<string | undefined> {
  let info: unknown;
  try {
    info = await redis.call("info", ["server"]);
  } catch (error) {
    if (!(error instanceof ReplyError)) throw error;
    return `ERR scripts are not available through this REST bridge: it could not tell which Redis runs them (INFO server failed: ${(error as Error).message})`;
  }
  const version = /^redis_version:(\S+)/m.exec(String(info))?.[1];
  const major = Number(version?.split(".")[0]);
  if (!(Number.isInteger(major) && major >= 7)) {
    return `ERR scripts are not available through this REST bridge on Redis ${version ?? "(unknown version)"}: it needs Redis 7 or later, whose read-only Lua globals let it keep a script in one database`;
  }
  let writable: unknown;
  try {
    writable = await redis.call("eval", [
      "return pcall(rawset, string, 'lower', string.lower) and 1 or 0",
      "0",
    ]);
  } catch (error) {
    if (!(error instanceof ReplyError)) throw error;
    writable = (error as Error).message;
  }
  if (writable === 0) return undefined;
  return `ERR scripts are not available through this REST bridge: this Redis (${version}) lets a script change Lua's globals, so the bridge could not keep scripts in one database`;
}
