/**
 * @module
 * Concurrency limits of handlers: a handler's `concurrency` option, checked when the engine is
 * created, and the {@link RunLimit} the runner hands to `beginRun` for each delivery of one of its
 * jobs — the store admits at most `limit` runs of one limit key at once, across every worker
 * (docs/adr/0013-concurrency-limits.md).
 *
 * The limit key of a job:
 * - without `key`: the handler's name — every job of the handler shares the limit;
 * - with `key` (a dotted path into the job's input, e.g. `"customerId"`, `"account.id"`,
 *   `"input.account.id"`): `<handler>=<n>:<tenant>:<value>` — jobs with the same value of the same
 *   tenant share it. The value is the input as submitted (before the schema's defaults and
 *   transforms): a string as it is, anything else as JSON (`42` and `"42"` are one key); missing
 *   or `null` is the empty key `""`, a group of its own; one longer than 128 UTF-8 bytes, or
 *   one that starts with `sha256:`, is replaced by `sha256:<hex of its SHA-256>`.
 */
import { MAX_RUN_LIMIT, type RunLimit } from "../store/port.ts";
import type { HandlerDefinition } from "./handlers.ts";

/** A handler's `concurrency` option: a limit, or a limit per value of an input field. */
export type ConcurrencyOption = number | { limit: number; key?: string };

/** Longest limit key value kept as it is (UTF-8 bytes); a longer one is hashed. */
export const MAX_LIMIT_VALUE_BYTES = 128;
/** How a hashed key value starts. */
const HASHED = "sha256:";

/** Longest `key` path, and most segments in it. */
const MAX_PATH_LENGTH = 200;
const MAX_PATH_DEPTH = 8;
const SEGMENT = /^[A-Za-z0-9_$-]+$/;

/** A checked `concurrency` option: the limit and the path (segments) of its key, if any. */
interface Concurrency {
  limit: number;
  path?: string[];
}

const encoder = new TextEncoder();

/**
 * Check a handler's `concurrency` option as {@link validateHandlers} does.
 *
 * @param at - the option's name in messages, e.g. `handlers["email.send"].concurrency`.
 * @throws TypeError or RangeError naming it, e.g.
 * `handlers["email.send"].concurrency.limit must be a whole number from 1 to 10000, got 0`.
 */
export function validateConcurrency(at: string, option: unknown): void {
  if (typeof option === "number") {
    checkLimit(at, option);
    return;
  }
  if (typeof option !== "object" || option === null || Array.isArray(option)) {
    throw new TypeError(
      `${at} must be a number or { limit, key? }, got ${JSON.stringify(option) ?? String(option)}`,
    );
  }
  const { limit, key, ...rest } = option as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length > 0) {
    throw new TypeError(`${at} has an unknown option ${JSON.stringify(unknown[0])}`);
  }
  checkLimit(`${at}.limit`, limit);
  if (key !== undefined && (typeof key !== "string" || parsePath(key) === undefined)) {
    throw new TypeError(
      `${at}.key must be a dotted path into the input (e.g. "customerId" or "account.id", segments of A-Z a-z 0-9 _ $ -, at most ${MAX_PATH_DEPTH}), got ${JSON.stringify(key)}`,
    );
  }
}

function checkLimit(at: string, limit: unknown): void {
  if (!(Number.isInteger(limit) && (limit as number) >= 1 && (limit as number) <= MAX_RUN_LIMIT)) {
    throw new RangeError(
      `${at} must be a whole number from 1 to ${MAX_RUN_LIMIT}, got ${JSON.stringify(limit)}`,
    );
  }
}

/**
 * The segments of a key path (`"input."` first is dropped), or `undefined` if it is not one.
 *
 * @example
 * parsePath("account.id");       // ["account", "id"]
 * parsePath("input.customerId"); // ["customerId"]
 * parsePath("a..b");             // undefined
 */
export function parsePath(key: string): string[] | undefined {
  if (key.length === 0 || key.length > MAX_PATH_LENGTH) return undefined;
  const path = key.split(".");
  if (path.length > 1 && path[0] === "input") path.shift();
  if (path.length > MAX_PATH_DEPTH || !path.every((segment) => SEGMENT.test(segment))) {
    return undefined;
  }
  return path;
}

function concurrencyOf(option: ConcurrencyOption): Concurrency {
  if (typeof option === "number") return { limit: option };
  const path = option.key === undefined ? undefined : parsePath(option.key);
  return path ? { limit: option.limit, path } : { limit: option.limit };
}

/**
 * The run limit of a job of handler `name` (defined by `definition`) with `input`, owned by
 * `tenant`; `undefined` for a handler without `concurrency` (or none found): such a job costs the
 * store nothing extra.
 *
 * @example
 * await runLimitOf("email.send", { concurrency: 5, run }, "default", {});
 * // { key: "email.send", limit: 5 }
 * await runLimitOf("sync", { concurrency: { limit: 1, key: "account.id" }, run }, "acme", { account: { id: 7 } });
 * // { key: "sync=4:acme:7", limit: 1 }
 */
export async function runLimitOf(
  name: string,
  definition: HandlerDefinition | undefined,
  tenant: string,
  input: unknown,
): Promise<RunLimit | undefined> {
  if (definition?.concurrency === undefined) return undefined;
  const concurrency = concurrencyOf(definition.concurrency);
  return {
    key: await limitKeyOf(name, concurrency.path, tenant, input),
    limit: concurrency.limit,
  };
}

/**
 * The limit key of a job of handler `name`: `name` without a `path`, else
 * `<name>=<tenant's UTF-8 length>:<tenant>:<value at path>` (see the module's doc). Shared by
 * concurrency and rate limits (`src/engine/rate-limit.ts`), so both group jobs alike.
 *
 * @example
 * await limitKeyOf("sync", ["account", "id"], "acme", { account: { id: 7 } }); // "sync=4:acme:7"
 * await limitKeyOf("sync", undefined, "acme", {});                             // "sync"
 */
export async function limitKeyOf(
  name: string,
  path: readonly string[] | undefined,
  tenant: string,
  input: unknown,
): Promise<string> {
  if (!path) return name;
  const value = await limitValue(valueAt(input, path));
  return `${name}=${encoder.encode(tenant).length}:${tenant}:${value}`;
}

/** The value at `path` in `input` (own properties only), or `undefined`. */
function valueAt(input: unknown, path: readonly string[]): unknown {
  let at: unknown = input;
  for (const segment of path) {
    if (typeof at !== "object" || at === null || !Object.hasOwn(at, segment)) return undefined;
    at = (at as Record<string, unknown>)[segment];
  }
  return at;
}

/**
 * A key value as the limit key holds it: missing or `null` → `""`; a string as it is; anything
 * else as JSON; longer than {@link MAX_LIMIT_VALUE_BYTES}, or starting with `sha256:` →
 * `sha256:<hex>` of that text.
 */
export async function limitValue(value: unknown): Promise<string> {
  if (value === undefined || value === null) return "";
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "");
  const bytes = encoder.encode(text);
  // A text that starts as a hash does is hashed too, so that no literal value spells the hash of
  // a long one (which would share its limit).
  if (bytes.length <= MAX_LIMIT_VALUE_BYTES && !text.startsWith(HASHED)) return text;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return `${HASHED}${Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * How soon a pulled delivery held back (a limit, or a node its placement refuses) is tried again,
 * at most: 0.5–1.5 s, spread so that many waiting deliveries do not come back at the same moment.
 */
export function pullRecheckMs(): number {
  return 500 + Math.floor(Math.random() * 1_000);
}
