/**
 * @module
 * `serve`: an app on a Node HTTP server (`@hono/node-server`) with graceful shutdown. The submit
 * route of an app from `createApp` is answered without building a web `Request` (./direct.ts).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { MAX_TIMER_MS } from "../../core/duration.ts";
import { directSubmitOf } from "../../http/direct-submit.ts";
import { loadPeer } from "../peer.ts";
import { answerDirect, takesDirect } from "./direct.ts";

/** The Node HTTP/1.1 server. */
type ServerType = Server;

/** Anything with a Web `fetch` handler: a Hono app, or `{ fetch }`. */
export interface FetchApp {
  fetch(request: Request, ...rest: never[]): Response | Promise<Response>;
}

/** Options of {@link serve}. */
export interface ServeOptions {
  /**
   * Port to listen on; `0` picks a free one (read it from {@link NodeServer.port}).
   * @default 8787
   */
  port?: number | undefined;
  /**
   * Interface to bind.
   * @default "127.0.0.1"
   * @example "0.0.0.0" // every interface, as in a container
   */
  hostname?: string | undefined;
  /**
   * Signals that start a graceful shutdown and then exit the process; `false` to handle none
   * (call {@link NodeServer.close} yourself). A second signal exits at once.
   * @default ["SIGINT", "SIGTERM"]
   */
  signals?: readonly NodeJS.Signals[] | false | undefined;
  /**
   * How long requests in flight (long-polls included) may take to finish once shutdown starts;
   * connections still open after it are cut. A whole number of ms from 0 to 2147483647.
   * @default 10_000
   */
  shutdownTimeoutMs?: number | undefined;
  /**
   * How long an idle keep-alive connection stays open (ms); `0` keeps it open until shutdown.
   * Longer than the idle timeout of the load balancers such a server runs behind (AWS's ALB: 60 s),
   * so that the balancer, not this server, ends an idle connection: a request the balancer sends
   * just as the server closes the connection would fail with a 502. Node 20's own default is 5 s;
   * later Node versions moved to 65 s for this reason.
   * @default 65_000
   */
  keepAliveTimeoutMs?: number | undefined;
  /** Runs once the server has stopped, before `close()` resolves: close stores, queues, timers. */
  onShutdown?: (() => unknown) | undefined;
  /** Where shutdown notes go. @default console.error */
  log?: ((line: string) => void) | undefined;
}

/** A listening server. */
export interface NodeServer {
  /** The underlying Node server. */
  server: ServerType;
  /** The port actually bound. */
  port: number;
  hostname: string;
  /** `http://<hostname>:<port>` (`127.0.0.1` when bound to every interface). */
  url: string;
  /** Aborted as soon as shutdown starts: stop timers and loops with it. */
  signal: AbortSignal;
  /**
   * Stop accepting, let requests in flight finish (up to the timeout: `shutdownTimeoutMs`, or
   * `timeoutMs` here), run `onShutdown`. Idempotent: a later call answers the first one's promise.
   */
  close(options?: { timeoutMs?: number | undefined }): Promise<void>;
}

/**
 * Serve `app` on Node until a signal (or `close()`), then shut down gracefully: stop accepting,
 * let requests in flight finish, run `onShutdown`, exit.
 *
 * `app` may be a function returning the app to serve each request with: listen first, build the
 * app once its store is open. When the app is one of `createApp` (tickwork/http), `POST
 * <basePath>/v1/jobs` with a body of declared length is answered by its direct submit route,
 * which answers as the app would, without a web `Request` and `Response` (a third of a submit's
 * CPU); every other request goes through `@hono/node-server` to `app.fetch`.
 *
 * @example
 * const app = createApp({ engine, apiKeys: [process.env.TICKWORK_API_KEY!], tickSecret: false });
 * const server = await serve(app, { port: 8787, onShutdown: () => store.close?.() });
 * console.log(`listening on ${server.url}`);
 */
export async function serve(
  app: FetchApp | (() => FetchApp),
  options: ServeOptions = {},
): Promise<NodeServer> {
  const hostname = options.hostname ?? "127.0.0.1";
  const timeoutMs = options.shutdownTimeoutMs ?? 10_000;
  const keepAliveMs = options.keepAliveTimeoutMs ?? 65_000;
  // Node's timers hold at most 2^31 - 1 ms; a longer one would fire at once.
  if (!(Number.isInteger(keepAliveMs) && keepAliveMs >= 0 && keepAliveMs <= MAX_TIMER_MS)) {
    throw new RangeError(
      `keepAliveTimeoutMs must be a whole number of ms from 0 to ${MAX_TIMER_MS}, got ${String(keepAliveMs)}`,
    );
  }
  // The same for the shutdown timeout: a negative, NaN or too long one cut every connection in
  // flight as soon as shutdown began.
  if (!(Number.isInteger(timeoutMs) && timeoutMs >= 0 && timeoutMs <= MAX_TIMER_MS)) {
    throw new RangeError(
      `shutdownTimeoutMs must be a whole number of ms from 0 to ${MAX_TIMER_MS}, got ${String(timeoutMs)}`,
    );
  }
  const log = options.log ?? ((line: string) => console.error(line));
  const controller = new AbortController();

  const { getRequestListener } = await loadPeer(
    "@hono/node-server",
    "serving tickwork on Node",
    () => import("@hono/node-server"),
  );
  const current = typeof app === "function" ? app : () => app;
  const fetchListener = getRequestListener((request) => current().fetch(request), { hostname });
  const server = createServer((request, response) => {
    // The submit route, answered without a web Request when the app has it (./direct.ts).
    if (request.method === "POST") {
      const direct = directSubmitOf(current());
      if (direct !== undefined && takesDirect(direct, request)) {
        answerDirect(direct, request, response);
        return;
      }
    }
    void fetchListener(request, response);
  });
  server.keepAliveTimeout = keepAliveMs;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 8787, hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  const signals = options.signals === false ? [] : (options.signals ?? ["SIGINT", "SIGTERM"]);
  let closing: Promise<void> | undefined;
  const close = (closeOptions?: { timeoutMs?: number | undefined }): Promise<void> => {
    closing ??= (async () => {
      controller.abort(new Error("server shutting down"));
      try {
        await stopServer(server, closeOptions?.timeoutMs ?? timeoutMs);
        await options.onShutdown?.();
      } finally {
        // Listening until the whole shutdown is over (onShutdown's steps included), so a second
        // signal always forces the exit: one that came as the HTTP server closed was lost.
        for (const signal of signals) process.off(signal, onSignal);
      }
    })();
    return closing;
  };

  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      log(`tickwork: ${signal} again, exiting now`);
      process.exit(130);
    }
    log(`tickwork: ${signal}, shutting down (up to ${timeoutMs} ms for requests in flight)`);
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`tickwork: shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      },
    );
  };
  for (const signal of signals) process.on(signal, onSignal);

  const shownHost = hostname === "0.0.0.0" || hostname === "::" ? "127.0.0.1" : hostname;
  const urlHost = shownHost.includes(":") ? `[${shownHost}]` : shownHost;
  return {
    server,
    port,
    hostname,
    url: `http://${urlHost}:${port}`,
    signal: controller.signal,
    close,
  };
}

/**
 * `server.close()` with a deadline. Keep-alive sockets are closed as soon as they are idle (a
 * request finishing during shutdown leaves its socket idle too), busy ones at the deadline.
 */
function stopServer(server: ServerType, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const closeIdle = () => {
      if ("closeIdleConnections" in server) server.closeIdleConnections();
    };
    const sweep = setInterval(closeIdle, 50);
    const cut = setTimeout(() => {
      if ("closeAllConnections" in server) server.closeAllConnections();
    }, timeoutMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(cut);
      resolve();
    });
    closeIdle();
  });
}
