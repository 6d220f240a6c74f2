/**
 * @module
 * Coalesced socket writes for an ioredis client: the first command of an event-loop turn leaves
 * at once, so Redis starts on it, and the commands issued after it in the same turn (the submits
 * of the HTTP requests that arrived together, a worker's next batch) leave together, in one
 * socket write, once the turn's I/O callbacks have run.
 *
 * A socket write is a system call, and on a busy server those were the largest single cost of a
 * submit (docs/adr/0039-coalesced-writes.md). ioredis's own `enableAutoPipelining` groups commands
 * too, but keeps one group in flight per connection: the next group waits for the answers of the
 * last, so callers move in lockstep with Redis. Here each command is still written, queued and
 * answered as ioredis always does it; only the socket's flush may wait until the end of the turn
 * (`setImmediate`). Nothing is reordered and nothing waits on an answer.
 */
import type { Redis } from "ioredis";

/**
 * Make `redis` coalesce its writes: the first command of an event-loop turn is written at once;
 * the ones after it in the same turn cork the connection's socket, which is uncorked once the
 * turn's I/O callbacks have run. Returns `redis`.
 *
 * `tickwork start` and `openStore` connect this way; call it on an ioredis client you build
 * yourself (for a `RedisStore` or `RedisStreams`) to get the same.
 *
 * @example
 * import { Redis } from "ioredis";
 * const redis = coalesceWrites(new Redis(process.env.REDIS_URL!));
 * const store = new RedisStore({ client: fromIoredis(redis), dispatch: "streams" });
 */
export function coalesceWrites<R extends IoredisLike>(client: R): R {
  const redis = client as unknown as Redis;
  const send = redis.sendCommand;
  /** A command has been written in this turn. */
  let inTurn = false;
  let corked: Redis["stream"] | undefined;
  const endTurn = () => {
    inTurn = false;
    const socket = corked;
    corked = undefined;
    // A socket that closed meanwhile has dropped what it held; ioredis resends or rejects those
    // commands as it does for any lost connection.
    socket?.uncork();
  };
  redis.sendCommand = function (this: Redis, command, stream) {
    // A command given its own stream belongs to a pipeline, which writes its commands together.
    // Before the connection is ready, ioredis queues commands itself and writes them at once.
    if (stream === undefined && redis.status === "ready") {
      if (!inTurn) {
        // The first of the turn goes out now: Redis works on it while the rest are built.
        inTurn = true;
        setImmediate(endTurn);
      } else if (corked === undefined) {
        const socket = redis.stream;
        if (socket?.writable) {
          socket.cork();
          corked = socket;
        }
      }
    }
    return send.call(this, command, stream);
  };
  return client;
}

/**
 * What {@link coalesceWrites} asks of its argument in its signature: an ioredis `Redis`, named by
 * its shape so that the declarations of `tickwork/node` do not need ioredis installed (an app on
 * the memory store or Upstash has none). An ioredis `Cluster` fits the shape too, but has no
 * socket of its own to cork: its writes go out as they would without this.
 */
export interface IoredisLike {
  readonly status: string;
  sendCommand(...args: never[]): unknown;
}
