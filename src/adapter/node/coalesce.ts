/**
 * @module
 * Coalesced socket writes for an ioredis client: the commands issued while the event loop
 * handles one batch of I/O (the submits of the HTTP requests that arrived together, the begins of
 * a worker's deliveries) leave in one socket write instead of one each.
 *
 * A socket write is a system call, and on a busy server those were the largest single cost of a
 * submit (docs/adr/0039-coalesced-writes.md). ioredis's own `enableAutoPipelining` groups commands
 * too, but keeps one group in flight per connection: the next group waits for the answers of the
 * last, so callers move in lockstep with Redis. Here each command is still written, queued and
 * answered as ioredis always does it; only the socket's flush waits until the turn's I/O
 * callbacks have run (`setImmediate`). Nothing is reordered and nothing waits on an answer.
 */
import type { Redis } from "ioredis";

/**
 * Make `redis` write the commands of one event-loop turn in one socket write: the first command
 * of a turn corks the connection's socket, and the socket is uncorked once the turn's I/O
 * callbacks have run. Returns `redis`.
 *
 * `tickwork start` and `openStore` connect this way; call it on an ioredis client you build
 * yourself (for a `RedisStore` or `RedisStreams`) to get the same.
 *
 * @example
 * import { Redis } from "ioredis";
 * const redis = coalesceWrites(new Redis(process.env.REDIS_URL!));
 * const store = new RedisStore({ client: fromIoredis(redis), dispatch: "streams" });
 */
export function coalesceWrites(redis: Redis): Redis {
  const send = redis.sendCommand;
  let corked: Redis["stream"] | undefined;
  const uncork = () => {
    const socket = corked;
    corked = undefined;
    // A socket that closed meanwhile has dropped what it held; ioredis resends or rejects those
    // commands as it does for any lost connection.
    socket?.uncork();
  };
  redis.sendCommand = function (this: Redis, command, stream) {
    // A command given its own stream belongs to a pipeline, which writes its commands together.
    // Before the connection is ready, ioredis queues commands itself and writes them at once.
    if (corked === undefined && stream === undefined && redis.status === "ready") {
      const socket = redis.stream;
      if (socket?.writable) {
        socket.cork();
        corked = socket;
        setImmediate(uncork);
      }
    }
    return send.call(this, command, stream);
  };
  return redis;
}
