/**
 * @module
 * Ports for servers a test starts whose address must be known before they start (a Worker's or a
 * server's own public URL, a `redis-server --port`). A port found free may be bound by another
 * process before the server binds it (seen in a busy run: "port … is in use"), so a start refused
 * for that goes again on another port ({@link onFreePort}).
 */
import { createServer } from "node:net";

/** A loopback port nothing listens on at this moment. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The most ports {@link onFreePort} tries. */
const ATTEMPTS = 5;

/**
 * `launch(port)` on a free port; when it fails with an error whose text matches `inUse` (the port
 * was taken between the pick and the bind), again on another port, up to {@link ATTEMPTS} ports.
 * `launch` must leave nothing running when it fails.
 */
export async function onFreePort<T>(
  inUse: RegExp,
  launch: (port: number) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await launch(port);
    } catch (error) {
      const text =
        error instanceof Error ? `${error.message}\n${error.stack ?? ""}` : String(error);
      if (attempt >= ATTEMPTS || !inUse.test(text)) throw error;
    }
  }
}
