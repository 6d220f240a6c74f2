/**
 * @module
 * A TCP fault proxy in front of Redis. Every connection is forwarded byte for byte to the upstream
 * Redis until a fault hits it:
 *
 * - `drop`: both sockets destroyed (the client sees the connection close);
 * - `reset`: the client's socket is reset (`resetAndDestroy`: a TCP RST), the upstream one closed;
 * - `stall`: forwarding paused both ways for a while (bytes are held, then delivered in order);
 * - `reply_lost`: the next reply from Redis is thrown away and the connection dropped — the
 *   command ran, its caller never learns (ioredis then re-sends it on the new connection);
 * - `outage`: every connection dropped, and new ones closed as soon as they open, for a while
 *   (ioredis gives up on a command after `maxRetriesPerRequest` reconnects: the call fails).
 */
import { createServer, type Server, Socket } from "node:net";

export type RedisFaultKind = "drop" | "reset" | "stall" | "reply_lost" | "outage";

interface Link {
  id: number;
  client: Socket;
  upstream: Socket;
  stalled: boolean;
  held: { toUpstream: Buffer[]; toClient: Buffer[] };
  loseNextReply: boolean;
  closed: boolean;
}

/**
 * The proxy. Faults are applied by calling its methods (the chaos schedule decides when).
 *
 * @example
 * const proxy = await RedisFaultProxy.start(6379);
 * const redis = new Redis(`redis://127.0.0.1:${proxy.port}`);
 * proxy.fault("reply_lost");
 */
export class RedisFaultProxy {
  readonly #server: Server;
  readonly #upstreamPort: number;
  readonly #links = new Set<Link>();
  #seq = 0;
  #refuseUntil = 0;
  /** Faults applied, by kind (a fault with no connection to hit is not counted). */
  readonly counts: Record<RedisFaultKind, number> = {
    drop: 0,
    reset: 0,
    stall: 0,
    reply_lost: 0,
    outage: 0,
  };
  /** Connections accepted, and those closed at once during an outage. */
  readonly connections = { accepted: 0, refused: 0 };

  private constructor(server: Server, upstreamPort: number) {
    this.#server = server;
    this.#upstreamPort = upstreamPort;
    server.on("connection", (client) => this.#accept(client));
  }

  /** Listen on a free loopback port, forwarding to `127.0.0.1:upstreamPort`. */
  static async start(upstreamPort: number): Promise<RedisFaultProxy> {
    const server = createServer();
    const proxy = new RedisFaultProxy(server, upstreamPort);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get port(): number {
    return (this.#server.address() as { port: number }).port;
  }

  /** Open connections. */
  get open(): number {
    return this.#links.size;
  }

  /**
   * Apply one fault. `pick` chooses the connection (index into the open ones) for the faults that
   * hit one; `ms` is how long a stall or an outage lasts. Returns false when there was nothing
   * to hit.
   */
  fault(kind: RedisFaultKind, pick: (n: number) => number = () => 0, ms = 0): boolean {
    const links = [...this.#links].filter((l) => !l.closed);
    if (kind === "outage") {
      this.#refuseUntil = Date.now() + ms;
      for (const link of links) this.#close(link, false);
      this.counts.outage++;
      return true;
    }
    const link = links[pick(links.length)];
    if (!link) return false;
    this.counts[kind]++;
    if (kind === "drop") this.#close(link, false);
    else if (kind === "reset") this.#close(link, true);
    else if (kind === "reply_lost") link.loseNextReply = true;
    else this.#stall(link, ms);
    return true;
  }

  async close(): Promise<void> {
    for (const link of this.#links) this.#close(link, false);
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #accept(client: Socket): void {
    client.setNoDelay(true);
    if (Date.now() < this.#refuseUntil) {
      this.connections.refused++;
      client.on("error", () => {});
      client.destroy();
      return;
    }
    this.connections.accepted++;
    const upstream = new Socket();
    const link: Link = {
      id: ++this.#seq,
      client,
      upstream,
      stalled: false,
      held: { toUpstream: [], toClient: [] },
      loseNextReply: false,
      closed: false,
    };
    this.#links.add(link);
    upstream.setNoDelay(true);
    upstream.connect(this.#upstreamPort, "127.0.0.1");
    client.on("data", (chunk: Buffer) => {
      if (link.stalled) link.held.toUpstream.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (link.loseNextReply) {
        this.#close(link, false);
        return;
      }
      if (link.stalled) link.held.toClient.push(chunk);
      else client.write(chunk);
    });
    const end = () => this.#close(link, false);
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
  }

  #stall(link: Link, ms: number): void {
    if (link.stalled) return;
    link.stalled = true;
    setTimeout(() => {
      link.stalled = false;
      if (link.closed) return;
      for (const chunk of link.held.toUpstream.splice(0)) link.upstream.write(chunk);
      for (const chunk of link.held.toClient.splice(0)) link.client.write(chunk);
    }, ms);
  }

  #close(link: Link, reset: boolean): void {
    if (link.closed) return;
    link.closed = true;
    this.#links.delete(link);
    if (reset && typeof link.client.resetAndDestroy === "function") link.client.resetAndDestroy();
    else link.client.destroy();
    link.upstream.destroy();
  }
}
