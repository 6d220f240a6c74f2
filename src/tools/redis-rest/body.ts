/**
 * @module
 * Request bodies read within bounds. The body is read as it arrives, never past `maxBytes`, and
 * its commands (for `/pipeline` and `/multi-exec`) and arguments are counted on the raw bytes as
 * they arrive (a scan of the JSON's structure that builds nothing), so a body over any cap is
 * refused with 413 before it is parsed, or read whole: an 8 MB pipeline of a million `["ping"]`s
 * is refused after its first hundred kilobytes. Arguments are capped as well as commands because
 * they are what costs memory: parsed, converted and written to Redis, one takes about 100 bytes
 * of the bridge's memory whatever its size on the wire (measured: 2.5 million one-letter keys,
 * 8 MB of JSON, took the bridge to 400 MB). Nothing outlives the request.
 */
import { hasUnsafeInteger } from "../../core/json-values.ts";
import { RedisRestError } from "./errors.ts";

/** The caps on one request. */
export interface BodyLimits {
  /** Largest body, in bytes. */
  maxBytes: number;
  /** Most commands in a `/pipeline` or `/multi-exec` body. */
  maxCommands: number;
  /** Most arguments in a body, all commands together (command names included). */
  maxArguments: number;
}

/**
 * The request's JSON body, read within `limits`: a 413 {@link RedisRestError} past any cap
 * (checked on `Content-Length` first, then on what actually arrives), a 400 when it is not JSON.
 * `commands` says whether the body is a list of commands to count.
 *
 * @example
 * const limits = { maxBytes: 10_485_760, maxCommands: 10_000, maxArguments: 500_000 };
 * const body = await readBoundedJson(c.req.raw, limits, true);
 */
export async function readBoundedJson(
  request: Request,
  limits: BodyLimits,
  commands: boolean,
): Promise<unknown> {
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > limits.maxBytes) throw tooLarge(limits.maxBytes);
  const counter = new Counter(commands);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body?.getReader();
  if (reader) {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > limits.maxBytes) throw tooLarge(limits.maxBytes);
        counter.scan(value);
        if (counter.commands > limits.maxCommands) throw tooMany(limits.maxCommands, "commands");
        if (counter.values > limits.maxArguments) throw tooMany(limits.maxArguments, "arguments");
        if (counter.deepest > MAX_DEPTH) {
          throw new RedisRestError(400, `ERR the request body nests deeper than ${MAX_DEPTH}`);
        }
        chunks.push(value);
      }
    } catch (error) {
      // Stop reading; the server discards the rest of what the client sends.
      reader.cancel().catch(() => {});
      if (error instanceof RedisRestError) throw error;
      throw new RedisRestError(400, "ERR the request body could not be read", { cause: error });
    }
  }
  const text = Buffer.concat(chunks, size).toString("utf8");
  chunks.length = 0;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new RedisRestError(400, "ERR the request body is not valid JSON", { cause: error });
  }
  // Sent as written, an integer past 2^53 would reach Redis as another number
  // (9007199254740993 as …992): refused, not changed.
  if (hasUnsafeInteger(text)) {
    throw new RedisRestError(
      400,
      "ERR an integer in the request has more digits than a double keeps (past 2^53): send it as a string",
    );
  }
  return body;
}

function tooLarge(maxBytes: number): RedisRestError {
  return new RedisRestError(413, `ERR max request size exceeded. Limit: ${maxBytes} bytes`);
}

function tooMany(limit: number, what: "commands" | "arguments"): RedisRestError {
  return new RedisRestError(
    413,
    `ERR max request size exceeded. Limit: ${limit} ${what} in one request (split it)`,
  );
}

/** Deepest nesting a body may have: commands are arrays of scalars, at depth 2 in a pipeline. */
const MAX_DEPTH = 4;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const COLON = 0x3a;

/**
 * Counts, from a JSON body's bytes, chunk by chunk: the entries of the top-level array (every
 * value that starts at depth 1, when `commands`), every value where a command's name or argument
 * goes or deeper (strings, numbers, literals, and arrays and objects too: a valid body has none
 * there, but a hostile one's cost the parse as much), and the deepest nesting. Strings are skipped
 * (escapes included), so brackets and commas inside them count for nothing. Malformed JSON is
 * counted somehow and then refused by `JSON.parse`; only a valid body's counts must be right.
 */
class Counter {
  commands = 0;
  values = 0;
  /** The deepest nesting seen (a pipeline's commands are at depth 2). */
  deepest = 0;
  readonly #commands: boolean;
  #depth = 0;
  #inString = false;
  #escaped = false;
  /** After `[`, `{`, `,` or `:`: the next significant byte starts a value. */
  #valueNext = false;

  constructor(commands: boolean) {
    this.#commands = commands;
  }

  scan(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (byte === BACKSLASH) this.#escaped = true;
        else if (byte === QUOTE) this.#inString = false;
        continue;
      }
      if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) continue;
      const structural =
        byte === OPEN_ARRAY ||
        byte === OPEN_OBJECT ||
        byte === CLOSE_ARRAY ||
        byte === CLOSE_OBJECT ||
        byte === COMMA ||
        byte === COLON;
      if (this.#valueNext && byte !== CLOSE_ARRAY && byte !== CLOSE_OBJECT) {
        if (this.#depth === 1 && this.#commands) this.commands++;
        if (!structural) this.values++;
        // An array or object where an argument goes (`[]`, `{}`: refused later, but parsed
        // first) costs the parse as much as a scalar: counted as one. A pipeline's commands
        // are not arguments.
        else if (
          (byte === OPEN_ARRAY || byte === OPEN_OBJECT) &&
          this.#depth >= (this.#commands ? 2 : 1)
        )
          this.values++;
      }
      this.#valueNext = false;
      if (byte === QUOTE) this.#inString = true;
      else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
        this.#depth++;
        if (this.#depth > this.deepest) this.deepest = this.#depth;
        this.#valueNext = true;
      } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) this.#depth--;
      else if (byte === COMMA || byte === COLON) this.#valueNext = true;
    }
  }
}
