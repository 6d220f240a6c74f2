/**
 * `readBody` of the direct submit route on real requests: a body read after its client has gone
 * (the route may await its authorisation first) counts when all of it had arrived, as
 * `@hono/node-server` reads it, and is a 400 otherwise; it never waits for events that already
 * happened.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { TickworkError } from "../../core/errors.ts";
import { readBody } from "./direct.ts";

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/**
 * Sends a submit declaring `declared` bytes of body and carrying `sent`, on a raw connection it
 * then ends; answers what `readBody` gives, read at once (`when: "now"`) or only once the request
 * has closed (`"after close"`).
 */
async function readOnce(
  declared: number,
  sent: string,
  when: "now" | "after close",
): Promise<Uint8Array | Error> {
  let result!: Promise<Uint8Array | Error>;
  const arrived = new Promise<void>((resolve) => {
    server = createServer((request: IncomingMessage) => {
      const read = () => readBody(request, 1_000).catch((error: unknown) => error as Error);
      if (when === "now") result = read();
      // Not `once(request, "close")`, which listens for `error` too: the route does not listen
      // before it reads, and Node emits an aborted request's error only to a listener.
      else result = new Promise((closed) => request.once("close", closed)).then(read);
      resolve();
    });
  });
  server!.listen(0, "127.0.0.1");
  await once(server!, "listening");
  const socket = connect((server!.address() as AddressInfo).port, "127.0.0.1");
  await once(socket, "connect");
  socket.end(
    `POST /v1/jobs HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\n\r\n${sent}`,
  );
  await arrived;
  return result;
}

describe("readBody", () => {
  const body = '{"handler":"echo"}';

  it("reads a whole body", async () => {
    const read = await readOnce(body.length, body, "now");
    expect(new TextDecoder().decode(read as Uint8Array)).toBe(body);
  });

  it("reads a whole body whose client closed before the read began", async () => {
    const read = await readOnce(body.length, body, "after close");
    expect(read).toBeInstanceOf(Uint8Array);
    expect(new TextDecoder().decode(read as Uint8Array)).toBe(body);
  });

  for (const when of ["now", "after close"] as const) {
    it(`a body cut short, read ${when === "now" ? "at once" : "after the close"}: 400 request_incomplete`, async () => {
      const read = await readOnce(100, body, when);
      expect(read).toBeInstanceOf(TickworkError);
      expect(read).toMatchObject({ status: 400, code: "request_incomplete" });
    });
  }
});
