/**
 * @module
 * The Node side of the direct submit route (src/http/direct-submit.ts): which requests it takes,
 * how their headers and body are read from the `IncomingMessage`, and how the answer is written.
 * Every other request goes to `@hono/node-server`, as before (docs/adr/0046-direct-submit.md).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { DirectRequest, DirectSubmit } from "../../http/direct-submit.ts";
import { bodyTooLarge, declaredLength, requestIncomplete } from "../../http/middleware/body.ts";

/**
 * A `Host` `@hono/node-server` builds the request's URL from as it is (its own test): any other
 * goes to it, which checks it or answers 400.
 */
const PLAIN_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;
/** What `Headers` trims off a value (HTTP whitespace), and nothing else. */
const HTTP_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/**
 * Whether `direct` answers `request` (a `POST`): its path exactly (any query string aside), a
 * plain `Host`, and a body of a declared length. Chunked bodies and unusual targets go to Hono.
 */
export function takesDirect(direct: DirectSubmit, request: IncomingMessage): boolean {
  const url = request.url ?? "";
  const query = url.indexOf("?");
  if ((query < 0 ? url : url.slice(0, query)) !== direct.path) return false;
  const raw = request.rawHeaders;
  const host = rawHeader(raw, "host");
  if (host === undefined || !PLAIN_HOST.test(host)) return false;
  return (
    declaredLength(rawHeader(raw, "content-length"), rawHeader(raw, "transfer-encoding")) !==
    undefined
  );
}

/** Answer `request` with `direct` (see {@link takesDirect}) and write the answer to `response`. */
export function answerDirect(
  direct: DirectSubmit,
  request: IncomingMessage,
  response: ServerResponse,
): void {
  const raw = request.rawHeaders;
  let read = false;
  const exchange: DirectRequest = {
    header: (name) => rawHeader(raw, name),
    body: (maxBytes) => {
      read = true;
      return readBody(request, maxBytes);
    },
  };
  direct
    .answer(exchange)
    .then(({ status, headers, text }) => {
      if (response.destroyed) return;
      // Refused before its body was read (401, 403, 415, 413 by its declared length): close the
      // connection after the answer rather than read and discard what the client still sends.
      if (!read || !request.complete) headers.connection = "close";
      headers["content-length"] = String(Buffer.byteLength(text));
      response.writeHead(status, headers);
      response.end(text);
    })
    // `answer` renders every error of the request as its answer: this is the write failing.
    .catch(() => response.destroy());
}

/**
 * A header of `raw` (`IncomingMessage.rawHeaders`) by its lower-case name, as `Headers.get`
 * reads it: every value of the name joined with `", "`, each trimmed of HTTP whitespace.
 */
export function rawHeader(raw: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length !== name.length || key.toLowerCase() !== name) continue;
    const v = raw[i + 1]!.replace(HTTP_WHITESPACE, "");
    value = value === undefined ? v : `${value}, ${v}`;
  }
  return value;
}

/**
 * The body of `request`, whose length was declared (see {@link takesDirect}): 413 before reading
 * when the declared length is over `maxBytes`, and when more arrives than that. When the client
 * has gone away, before the read or during it, the body still counts if all of it had arrived
 * (as `@hono/node-server` reads such a body); otherwise a 400 (`requestIncomplete`). Exported for
 * its tests.
 */
export function readBody(request: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(rawHeader(request.rawHeaders, "content-length"));
  if (declared > maxBytes) return Promise.reject(bodyTooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (!settle()) return;
      if (size > maxBytes) reject(bodyTooLarge(maxBytes));
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    // The connection ended before the body did, as far as this read saw. Node's parser may have
    // had all of it (`complete`), still buffered in the request: read it then.
    const gone = (error?: Error) => {
      if (settled) return;
      if (request.complete) {
        // Read by hand: `read()` may emit what it returns as `data` too.
        request.off("data", onData);
        for (let chunk = request.read() as Buffer | null; chunk !== null; chunk = request.read()) {
          onData(chunk);
        }
        if (size === declared) {
          onEnd();
          return;
        }
      }
      if (settle()) reject(requestIncomplete(error));
    };
    const onClose = () => (request.readableEnded ? onEnd() : gone());
    const onError = (error: Error) => gone(error);
    const settle = () => {
      if (settled) return false;
      settled = true;
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("close", onClose);
      request.off("error", onError);
      return true;
    };
    request.on("data", onData);
    request.on("end", onEnd);
    request.on("close", onClose);
    request.on("error", onError);
    // Listening from now on: what already happened (the route may have awaited its authorisation
    // first) emits nothing more.
    if (request.readableEnded) onEnd();
    else if (request.errored) onError(request.errored);
    else if (request.destroyed) onClose();
  });
}
