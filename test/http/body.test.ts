/**
 * `readJson` / `readText` (`src/http/middleware/body.ts`) on requests handed to `app.fetch`
 * directly: with a declared `Content-Length` the body is read whole, and still refused when it
 * holds more than the limit; without one it is read as a stream and cut off at the limit.
 */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { TickworkError } from "../../src/core/errors.ts";
import { readJson, readText } from "../../src/http/middleware/body.ts";
import type { AppEnv } from "../../src/http/options.ts";

const LIMIT = 64;

function app(): Hono<AppEnv> {
  const a = new Hono<AppEnv>();
  a.post("/json", async (c) => c.json({ body: await readJson(c, LIMIT) }));
  a.post("/text", async (c) => c.json({ body: await readText(c, LIMIT) }));
  a.onError((error, c) =>
    c.json(
      { status: error instanceof TickworkError ? error.status : 500, error: error.message },
      error instanceof TickworkError ? (error.status as 400) : 500,
    ),
  );
  return a;
}

function post(path: string, body: BodyInit, headers: Record<string, string> = {}): Request {
  return new Request(`http://localhost${path}`, {
    method: "POST",
    body,
    headers: { "content-type": "application/json", ...headers },
    duplex: "half",
  } as RequestInit);
}

function stream(parts: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
      controller.close();
    },
  });
}

describe("request bodies", () => {
  it("reads a body with a Content-Length", async () => {
    const text = JSON.stringify({ a: "é" });
    const length = String(new TextEncoder().encode(text).byteLength);
    const res = await app().fetch(post("/json", text, { "content-length": length }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ body: { a: "é" } });
    const raw = await app().fetch(post("/text", "plain", { "content-length": "5" }));
    expect(await raw.json()).toEqual({ body: "plain" });
  });

  it("413 for a declared length over the limit, and for more bytes than declared", async () => {
    const big = JSON.stringify({ a: "x".repeat(LIMIT) });
    const declared = await app().fetch(
      post("/json", big, { "content-length": String(big.length) }),
    );
    expect(declared.status).toBe(413);
    const lying = await app().fetch(post("/json", big, { "content-length": "2" }));
    expect(lying.status).toBe(413);
  });

  it("reads a body without a length as a stream, cut off at the limit", async () => {
    const ok = await app().fetch(post("/json", stream(['{"a":', "1}"])));
    expect(await ok.json()).toEqual({ body: { a: 1 } });
    const over = await app().fetch(post("/json", stream(['{"a":"', "y".repeat(LIMIT), '"}'])));
    expect(over.status).toBe(413);
  });

  it("400 for a body that is not UTF-8, also after an earlier bad one", async () => {
    const bad = new Uint8Array([0x7b, 0x22, 0xe2, 0x82, 0x22, 0x7d]);
    const first = await app().fetch(post("/json", bad, { "content-length": String(bad.length) }));
    expect(first.status).toBe(400);
    const good = new Uint8Array([0x22, 0xe2, 0x82, 0xac, 0x22]);
    const second = await app().fetch(
      post("/json", good, { "content-length": String(good.length) }),
    );
    expect(await second.json()).toEqual({ body: "€" });
  });
});
