/**
 * @module
 * The load balancer in front of the worker processes: the one public URL that QStash delivers to
 * and clients submit to. Every request goes to a slot chosen at random; a slot whose process is
 * dead or still starting answers 502, as a platform's router would, and a process killed while
 * answering turns into a 502 too. A `delivery_timeout` fault holds the answer to a delivery past
 * the queue's timeout (the handler ran and was recorded; the queue retries it anyway).
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";

/** Where each slot's process listens now, or undefined while it is down. */
export type SlotPorts = (number | undefined)[];

/** Decides, per delivery, whether to hold its answer back (the fault), and picks slots. */
export interface BalancerChoices {
  slot(n: number): number;
  holdDelivery(): boolean;
}

/** What the balancer saw. */
export interface BalancerCounts {
  requests: number;
  /** Answered 502 because the chosen slot was down. */
  toDeadSlot: number;
  /** Answered 502 because the process died (or refused) while the request was in flight. */
  diedInFlight: number;
  /** Deliveries whose answer was held past the queue's timeout. */
  deliveryTimeouts: number;
}

/**
 * The balancer.
 *
 * @example
 * const lb = await Balancer.start(ports, choices, 3_500);
 * // QStash delivers to `${lb.url}/v1/worker`
 */
export class Balancer {
  readonly #server: Server;
  readonly #ports: SlotPorts;
  readonly #holdMs: number;
  choices: BalancerChoices;
  readonly counts: BalancerCounts = {
    requests: 0,
    toDeadSlot: 0,
    diedInFlight: 0,
    deliveryTimeouts: 0,
  };

  private constructor(server: Server, ports: SlotPorts, choices: BalancerChoices, holdMs: number) {
    this.#server = server;
    this.#ports = ports;
    this.choices = choices;
    this.#holdMs = holdMs;
    server.on("request", (req: IncomingMessage, res: ServerResponse) => this.#route(req, res));
  }

  /** Listen on a free loopback port. `ports` is read on every request (update it in place). */
  static async start(
    ports: SlotPorts,
    choices: BalancerChoices,
    holdMs: number,
  ): Promise<Balancer> {
    const server = createServer();
    server.keepAliveTimeout = 30_000;
    const lb = new Balancer(server, ports, choices, holdMs);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return lb;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #route(req: IncomingMessage, res: ServerResponse): void {
    this.counts.requests++;
    const port = this.#ports[this.choices.slot(this.#ports.length)];
    if (port === undefined) {
      this.counts.toDeadSlot++;
      req.resume();
      badGateway(res, "worker is down");
      return;
    }
    const isDelivery = req.url === "/v1/worker";
    const hold = isDelivery && this.choices.holdDelivery();
    const upstream = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on("data", (c: Buffer) => chunks.push(c));
        answer.on("error", () => {
          this.counts.diedInFlight++;
          badGateway(res, "worker died");
        });
        answer.on("end", () => {
          const send = () => {
            if (res.headersSent || res.destroyed) return;
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(chunks));
          };
          if (!hold) return send();
          this.counts.deliveryTimeouts++;
          setTimeout(send, this.#holdMs);
        });
      },
    );
    upstream.on("error", () => {
      this.counts.diedInFlight++;
      badGateway(res, "worker died");
    });
    req.pipe(upstream);
  }
}

function badGateway(res: ServerResponse, why: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(502, { "content-type": "text/plain" });
  res.end(why);
}
