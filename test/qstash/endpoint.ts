/**
 * A destination for the QStash double to deliver to: a real HTTP server on 127.0.0.1:0 that
 * records every request and answers per path.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** A request the endpoint received. */
export interface Hit {
  method: string;
  path: string;
  headers: Headers;
  body: string;
  at: number;
}

/** How to answer. */
export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
  /** Never answer (the caller must time out). */
  hang?: boolean;
  /** Close the connection without an answer (the caller sees a network error). */
  drop?: boolean;
}

/** Answers the `index`-th request (0-based) to a path. */
export type Route = (hit: Hit, index: number) => Reply;

export interface Endpoint {
  base: string;
  hits: Hit[];
  /** Requests to `path`, in arrival order. */
  at(path: string): Hit[];
  /** Most requests answered concurrently so far. */
  maxActive(): number;
  /** Requests whose connection the caller closed before they were answered. */
  aborted(): number;
  close(): Promise<void>;
}

/** Start an endpoint; unknown paths answer 404. */
export async function startEndpoint(routes: Record<string, Route>): Promise<Endpoint> {
  const hits: Hit[] = [];
  let active = 0;
  let maxActive = 0;
  let aborted = 0;
  const server = createServer((req, res) => {
    let dropped = false;
    res.on("close", () => {
      if (!res.writableEnded && !dropped) aborted++;
    });
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
      }
      const hit: Hit = {
        method: req.method ?? "",
        path: req.url ?? "/",
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      };
      const index = hits.filter((h) => h.path === hit.path).length;
      hits.push(hit);
      const route = routes[hit.path];
      const reply = route ? route(hit, index) : { status: 404 };
      if (reply.hang) return;
      if (reply.drop) {
        dropped = true;
        req.socket.destroy();
        return;
      }
      active++;
      maxActive = Math.max(maxActive, active);
      setTimeout(() => {
        active--;
        res.writeHead(reply.status, reply.headers);
        res.end(reply.body ?? "");
      }, reply.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    at: (path) => hits.filter((h) => h.path === path),
    maxActive: () => maxActive,
    aborted: () => aborted,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Always 200. */
export const ok: Route = () => ({ status: 200, body: "ok" });
