/**
 * A TCP proxy in front of Redis that a test can cut: pass traffic, drop the next request before
 * it reaches Redis, or let it reach Redis and drop the reply — then refuse every connection until
 * it is restored. What a Redis outage in the middle of a request looks like to the client.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

export type ProxyMode =
  /** Forward both ways. */
  | "pass"
  /** The next request is dropped before Redis sees it; then `down`. */
  | "cut-before"
  /** The next request reaches Redis, its reply is dropped; then `down`. */
  | "cut-after"
  /** Every connection is closed at once and new ones are refused (nothing listens). */
  | "down";

export interface TcpProxy {
  url: string;
  mode: ProxyMode;
  /** Requests dropped before Redis / replies dropped after it. */
  readonly cuts: { before: number; after: number };
  /**
   * With a `cut-*` mode: let this many requests through first (each client write is one
   * request: ioredis writes a command at once), then cut the next.
   */
  skip: number;
  close(): Promise<void>;
}

/** Start a proxy on a free loopback port in front of `target` (`host:port`). Going `down` stops
 * listening; any other mode listens again on the same port. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const cuts = { before: 0, after: 0 };
  const state: { mode: ProxyMode; skip: number } = { mode: "pass", skip: 0 };
  let port = 0;
  let listening = false;
  const cutAll = () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
  };
  /** Down: stop listening, so a client's reconnects are refused (not accepted and dropped). */
  const goDown = () => {
    state.mode = "down";
    cutAll();
    if (listening) {
      listening = false;
      server.close();
    }
  };
  const listen = () =>
    new Promise<void>((resolve) => {
      if (listening) return resolve();
      listening = true;
      server.listen(port, "127.0.0.1", () => resolve());
    });
  const server: Server = createServer((client) => {
    if (state.mode === "down") {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    let awaitingCut = false;
    client.on("data", (chunk) => {
      if (state.mode === "down") return cutAll();
      if (state.mode !== "pass" && state.skip > 0) {
        state.skip--;
        upstream.write(chunk);
        return;
      }
      if (state.mode === "cut-before") {
        cuts.before++;
        return goDown();
      }
      if (state.mode === "cut-after") awaitingCut = true;
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (awaitingCut) {
        cuts.after++;
        return goDown();
      }
      if (state.mode === "down") return cutAll();
      client.write(chunk);
    });
    for (const socket of [client, upstream]) {
      socket.on("error", () => {});
      socket.on("close", () => {
        sockets.delete(socket);
        (socket === client ? upstream : client).destroy();
      });
    }
  });
  await listen();
  port = (server.address() as { port: number }).port;
  return {
    url: `redis://127.0.0.1:${port}`,
    get mode() {
      return state.mode;
    },
    set mode(mode: ProxyMode) {
      if (mode === "down") {
        goDown();
      } else {
        state.mode = mode;
        void listen();
      }
    },
    get skip() {
      return state.skip;
    },
    set skip(n: number) {
      state.skip = n;
    },
    cuts,
    async close() {
      cutAll();
      if (listening) {
        listening = false;
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}
