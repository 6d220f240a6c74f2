/**
 * @module
 * A fault layer in front of the QStash double's publish API (what the transport's `baseUrl` points
 * at). Each publish request either passes, or — chosen by the chaos PRNG — is:
 *
 * - `publish_5xx`: answered 500 without reaching the double (nothing accepted);
 * - `accepted_reported_failed`: forwarded (the double accepts and will deliver), answered 500;
 * - `publish_timeout_accepted`: forwarded, its answer held back past the client's timeout;
 * - `publish_timeout_lost`: held past the client's timeout, then the connection is cut, never
 *   forwarded (the SDK retries a network error; the outbox keeps the message either way).
 *
 * The delivery side's faults (duplicates, reordering, retries, failure callbacks) are the
 * double's own (`QStashDouble.faults`, its retry policy and failure callback).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

export type PublishFaultKind =
  | "publish_5xx"
  | "accepted_reported_failed"
  | "publish_timeout_accepted"
  | "publish_timeout_lost";

/** Chooses a fault (or none) for one publish request. */
export type PublishFaultPicker = () => PublishFaultKind | undefined;

/**
 * The fault layer.
 *
 * @example
 * const layer = await QStashFaultLayer.start(double.url, () => (rng.chance(0.05) ? "publish_5xx" : undefined), 2_500);
 * new QStashTransport({ baseUrl: layer.url, ... });
 */
export class QStashFaultLayer {
  readonly #server: Server;
  readonly #upstream: string;
  readonly #holdMs: number;
  /** Which faults to apply; replace it to turn faults on or off. */
  pick: PublishFaultPicker;
  readonly counts: Record<PublishFaultKind, number> = {
    publish_5xx: 0,
    accepted_reported_failed: 0,
    publish_timeout_accepted: 0,
    publish_timeout_lost: 0,
  };
  /** Publish requests seen. */
  requests = 0;

  private constructor(server: Server, upstream: string, pick: PublishFaultPicker, holdMs: number) {
    this.#server = server;
    this.#upstream = upstream;
    this.pick = pick;
    this.#holdMs = holdMs;
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.#handle(req, res, Buffer.concat(chunks)).catch(() => res.destroy());
      });
    });
  }

  /** Listen on a free loopback port in front of `upstream` (the double's base URL). */
  static async start(
    upstream: string,
    pick: PublishFaultPicker,
    holdMs: number,
  ): Promise<QStashFaultLayer> {
    const server = createServer();
    const layer = new QStashFaultLayer(server, upstream, pick, holdMs);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return layer;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  async #handle(req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
    const path = req.url ?? "/";
    const isPublish = req.method === "POST" && /^\/v2\/(batch|publish\/)/.test(path);
    const fault = isPublish ? this.pick() : undefined;
    if (isPublish) this.requests++;
    if (fault) this.counts[fault]++;
    if (fault === "publish_5xx") return reply(res, 500, '{"error":"injected: server error"}');
    if (fault === "publish_timeout_lost") {
      await sleep(this.#holdMs);
      res.destroy();
      return;
    }
    const upstream = await this.#forward(req, body);
    if (fault === "accepted_reported_failed") {
      return reply(res, 500, '{"error":"injected: accepted, reported failed"}');
    }
    if (fault === "publish_timeout_accepted") await sleep(this.#holdMs);
    reply(res, upstream.status, upstream.body);
  }

  async #forward(req: IncomingMessage, body: Buffer): Promise<{ status: number; body: string }> {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || name === "host" || name === "content-length") continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const res = await fetch(`${this.#upstream}${req.url ?? "/"}`, {
      method: req.method ?? "POST",
      headers,
      body: new Uint8Array(body),
    });
    return { status: res.status, body: await res.text() };
  }
}

function reply(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(body);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
