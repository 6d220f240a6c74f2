/**
 * @module
 * Reading request bodies within a size limit: the declared `Content-Length` is checked first, and
 * the bytes actually read are counted too (chunked bodies have no length; a lying one is cut off).
 */
import type { Context } from "hono";
import { TickworkError, ValidationError } from "../../core/errors.ts";
import { bodyIssues, FORBIDDEN_KEYS, jsonDepth, MAX_JSON_DEPTH } from "../../core/schemas.ts";
import type { AppEnv } from "../options.ts";

/** Stateless between calls (no `stream` option), so one instance serves every request. */
const UTF8 = new TextDecoder("utf-8", { fatal: true });
const TEXT = new TextDecoder();
/** A `Content-Length` as HTTP defines it: decimal digits only. */
const DECIMAL = /^\d+$/;
/** A structured-syntax `+json` media type (RFC 6839), e.g. `application/merge-patch+json`. */
const JSON_SUFFIX = /^application\/[\w.+-]+\+json$/;

/**
 * The JSON body of a request: 415 unless it is `application/json` (or `+json`) without a content
 * coding (`Content-Encoding` absent or `identity`), 413 when over
 * `maxBytes`, 400 when it is not valid UTF-8 JSON, nests deeper than {@link MAX_JSON_DEPTH}, or
 * holds a key of {@link FORBIDDEN_KEYS} anywhere (`__proto__`, `constructor`, `prototype`). A body
 * that wraps jobs (a batch's `{"jobs":[…]}`, a flow's `{"children":[…]}`) passes the levels it
 * adds as `wrapperDepth`, so a job it holds may nest as deep as one `POST /v1/jobs` takes.
 *
 * @example
 * const body = await readJson(c, 1_048_576);
 */
export function readJson(c: Context<AppEnv>, maxBytes: number, wrapperDepth = 0): Promise<unknown> {
  return jsonBody(
    (name) => c.req.header(name),
    (max) => readLimited(c.req.raw, max),
    maxBytes,
    wrapperDepth,
  );
}

/**
 * What {@link readJson} does, for a request at hand as its headers (`header(name)`) and a reader
 * of its body (`read(maxBytes)`: the bytes, or a 413 as soon as the body is known to be longer,
 * as {@link bodyTooLarge} answers). The media type and coding are checked before the body is
 * read.
 *
 * @example
 * const body = await jsonBody((name) => headers.get(name) ?? undefined, (max) => readBody(max), 1_048_576);
 */
export async function jsonBody(
  headers: (name: string) => string | undefined,
  read: (maxBytes: number) => Promise<Uint8Array>,
  maxBytes: number,
  wrapperDepth = 0,
): Promise<unknown> {
  const header = headers("content-type");
  // What clients send nearly always: decided without splitting and lowering the header.
  const type =
    header === "application/json" ? header : (header?.split(";")[0]?.trim().toLowerCase() ?? "");
  if (type !== "application/json" && !JSON_SUFFIX.test(type)) {
    throw new TickworkError(
      415,
      "unsupported_media_type",
      `request body must be application/json, got ${type ? JSON.stringify(type) : "no Content-Type"}`,
    );
  }
  // A coded body (gzip) was read as if plain: one labelled gzip but sent plain was taken, and a
  // real one was refused as "not valid UTF-8" (RFC 9110: 415 for a coding the server does not do).
  const coding = headers("content-encoding");
  if (coding !== undefined && coding.trim() !== "" && coding.trim().toLowerCase() !== "identity") {
    throw new TickworkError(
      415,
      "unsupported_media_type",
      `request body must not be encoded: send it as plain JSON, without Content-Encoding (got ${JSON.stringify(coding.slice(0, 64))})`,
    );
  }
  const bytes = await read(maxBytes);
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new ValidationError("request body is not valid UTF-8", [
      { path: "", message: "not UTF-8" },
    ]);
  }
  // Counted before parsing: a deeply nested body is refused without building it.
  const maxDepth = MAX_JSON_DEPTH + wrapperDepth;
  if (jsonDepth(text, maxDepth) > maxDepth) {
    throw tooDeep(wrapperDepth > 0 ? "a job of the request body" : "request body", "", maxDepth);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = error instanceof Error ? error.message : "not JSON";
    throw new ValidationError("request body is not valid JSON", [{ path: "", message }]);
  }
  const refused = bodyIssues(value, { parsed: true });
  if (refused.length > 0) {
    const keys = refused.some((issue) => issue.message.startsWith("the key"));
    throw new ValidationError(
      keys
        ? `request body uses a reserved key (${FORBIDDEN_KEYS.join(", ")})`
        : "request body holds a number out of range",
      refused,
    );
  }
  return value;
}

/**
 * The 400 for a body, or the job at `path` in it, that nests deeper than {@link MAX_JSON_DEPTH}
 * levels (`levels` counted from where the check began).
 */
export function tooDeep(what: string, path: string, levels: number): ValidationError {
  return new ValidationError(`${what} nests deeper than ${MAX_JSON_DEPTH} levels`, [
    { path, message: `more than ${levels} levels of objects and arrays` },
  ]);
}

/**
 * The raw body of a queue delivery, as text (the delivery signature covers exactly these bytes);
 * 413 when over `maxBytes`.
 */
export async function readText(c: Context<AppEnv>, maxBytes: number): Promise<string> {
  return TEXT.decode(await readLimited(c.req.raw, maxBytes));
}

/**
 * The raw body bytes of a request (an inbound webhook's signature covers exactly these); 413 as
 * soon as it is known to be longer than `maxBytes`, without reading the rest.
 */
export async function readBytes(c: Context<AppEnv>, maxBytes: number): Promise<Uint8Array> {
  return readLimited(c.req.raw, maxBytes);
}

/** Read at most `maxBytes` of `request`'s body; 413 as soon as it is known to be longer. */
async function readLimited(request: Request, maxBytes: number): Promise<Uint8Array> {
  const length = request.headers.get("content-length");
  const declared = Number(length ?? "0");
  if (declared > maxBytes) throw bodyTooLarge(maxBytes);
  if (declaredLength(length, request.headers.get("transfer-encoding")) !== undefined) {
    // A declared length within the limit: the server's HTTP parser delivers no more than that,
    // so the body can be read whole. `arrayBuffer()` lets `@hono/node-server` read it straight
    // from the socket, without building a web `ReadableStream` (a large share of a small
    // request's CPU). Counted again all the same: a body longer than it said is still refused.
    // A body read before (by middleware of the user's, say) fails as it did: that is no client
    // going away.
    const fresh = !request.bodyUsed;
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await request.arrayBuffer());
    } catch (error) {
      throw fresh ? requestIncomplete(error) : error;
    }
    if (bytes.byteLength > maxBytes) throw bodyTooLarge(maxBytes);
    return bytes;
  }
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch (error) {
      throw requestIncomplete(error);
    }
    const { done, value } = chunk;
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw bodyTooLarge(maxBytes);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/**
 * A body's length when the server's HTTP parser delivers exactly that many bytes: a decimal
 * `Content-Length` and no `Transfer-Encoding`. `undefined` otherwise (read it as a stream).
 */
export function declaredLength(
  contentLength: string | null | undefined,
  transferEncoding: string | null | undefined,
): number | undefined {
  return contentLength != null && DECIMAL.test(contentLength) && transferEncoding == null
    ? Number(contentLength)
    : undefined;
}

/**
 * The 400 of a request whose body ended early: the client closed the connection (or it broke)
 * before sending all of it. Nobody reads this answer; it is what the request's log line shows. A
 * client going away is not the server failing: not a 5xx, not a "request failed" warning (an
 * aborted read fails with Node's `ECONNRESET`, which would read as the store being unreachable).
 */
export function requestIncomplete(cause?: unknown): TickworkError {
  return new TickworkError(
    400,
    "request_incomplete",
    "the request body could not be read to its end: the client closed the connection, or the body broke off",
    { cause },
  );
}

/** The 413 of a body longer than `maxBytes`. */
export function bodyTooLarge(maxBytes: number): TickworkError {
  return new TickworkError(
    413,
    "content_too_large",
    `request body is larger than ${maxBytes} bytes`,
  );
}
