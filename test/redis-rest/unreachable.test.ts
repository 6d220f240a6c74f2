/**
 * A store over REST (`@upstash/redis`) that cannot reach Redis answers 503 `store_unavailable`
 * with `Retry-After`, as a socket error on TCP does, not 500: the REST endpoint refusing the
 * connection, answering that Redis is unavailable (the `tickwork redis-rest` bridge's 503, an
 * Upstash outage), or a gateway's error page that is not JSON. Real HTTP servers stand in for the
 * failing endpoint; the app is served over a real socket.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "@upstash/redis";
import { afterEach, describe, expect, it } from "vitest";
import { RedisStore } from "../../src/store/redis/index.ts";
import { call, expectProblem, type Harness, startHarness } from "../http/harness.ts";

let h: Harness | undefined;
let endpoint: Server | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  endpoint?.closeAllConnections();
  await new Promise((resolve) => endpoint?.close(resolve) ?? resolve(undefined));
  endpoint = undefined;
});

/** An HTTP server answering every request with `status`, `type` and `body`; its URL. */
async function answering(status: number, type: string, body: string): Promise<string> {
  endpoint = createServer((_, res) => {
    res.writeHead(status, { "content-type": type });
    res.end(body);
  });
  await new Promise<void>((resolve) => endpoint?.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
}

async function appOn(url: string): Promise<Harness> {
  const client = new Redis({ url, token: "t", retry: false, enableTelemetry: false });
  h = await startHarness({
    store: new RedisStore({ client, prefix: "unreachable" }),
    handlers: { echo: { run: (input: unknown) => input } },
  });
  return h;
}

describe("a store over REST that cannot reach Redis", () => {
  it.each([
    [
      "Redis unavailable behind the endpoint (503 JSON)",
      503,
      "application/json",
      '{"error":"ERR Redis is unavailable: connect ECONNREFUSED"}',
    ],
    ["a gateway's error page (502 HTML)", 502, "text/html", "<html>502 Bad Gateway</html>"],
  ])("%s: 503 store_unavailable with Retry-After", async (_, status, type, body) => {
    const app = await appOn(await answering(status, type, body));
    for (const [method, path, json] of [
      ["GET", "/v1/schedules/nope", undefined],
      ["POST", "/v1/jobs", { handler: "echo", input: { secret: "do-not-log" } }],
    ] as const) {
      const answer = await call(app.origin, method, path, json ? { json } : {});
      expectProblem(answer, 503);
      expect(answer.body.type).toBe("urn:tickwork:problem:store_unavailable");
      expect(answer.headers.get("retry-after")).toBeTruthy();
    }
  });

  it("the endpoint refusing connections: 503 store_unavailable", async () => {
    // Port 1, where nothing listens: not a port freed by a server closed here, which a test
    // running beside this one could be given next (then it answered, and the store read a 500).
    const app = await appOn("http://127.0.0.1:1");
    expectProblem(await call(app.origin, "GET", "/v1/schedules/nope"), 503);
  });
});
