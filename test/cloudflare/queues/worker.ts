/**
 * The Worker of `test/cloudflare/workerd-queues.test.ts`: `createWorker` from the sources (so the
 * test needs no build), with handlers that count their runs, and two test hooks — `GET /__test`
 * answers what this isolate saw (handler runs, queue messages, injected consumer crashes), and a
 * batch holding a message of a job whose input has `crashConsumer` makes the consumer throw
 * mid-batch once per tag: the first message is answered as usual, the second runs but its ack is
 * lost, the rest never run, then `queue()` throws (the runtime redelivers every unacked message).
 */
import { createWorker } from "../../../src/adapter/cloudflare/index.ts";
import type { Handlers } from "../../../src/engine/handlers.ts";
import type { QueueBatch, QueueMessage } from "../../../src/transport/cloudflare-queues/index.ts";

const runs: Record<string, number> = {};
const seen: { jobId: string; attempts: number; at: number }[] = [];
const crashed: string[] = [];

const count = (jobId: string) => {
  runs[jobId] = (runs[jobId] ?? 0) + 1;
};

const handlers: Handlers = {
  echo: {
    run: (input, ctx) => {
      count(ctx.jobId);
      return input;
    },
  },
  fail: {
    run: (_input, ctx) => {
      count(ctx.jobId);
      throw new Error(`fail: attempt ${ctx.attempt} failed on purpose`);
    },
  },
};

const worker = createWorker({ handlers });

function jobOf(message: QueueMessage): { id: string; tag?: string } {
  const job = JSON.parse(String(message.body)) as {
    id: string;
    input?: { crashConsumer?: string };
  };
  return { id: job.id, ...(job.input?.crashConsumer ? { tag: job.input.crashConsumer } : {}) };
}

export default {
  fetch(request: Request, env: never, ctx: never) {
    if (new URL(request.url).pathname === "/__test") {
      return Response.json({ runs, seen, crashed });
    }
    return worker.fetch(request, env, ctx);
  },
  scheduled(controller: unknown, env: never, ctx: never) {
    worker.scheduled(controller, env, ctx);
  },
  async queue(batch: QueueBatch, env: never, ctx: never) {
    for (const m of batch.messages) {
      seen.push({ jobId: jobOf(m).id, attempts: m.attempts, at: Date.now() });
    }
    const tag = batch.messages.map((m) => jobOf(m).tag).find((t) => t && !crashed.includes(t));
    if (!tag) {
      await worker.queue(batch, env, ctx);
      return;
    }
    crashed.push(tag);
    const [first, second] = batch.messages;
    const lostAck = (m: QueueMessage): QueueMessage => ({
      id: m.id,
      body: m.body,
      attempts: m.attempts,
      ack: () => {},
      retry: (options) => m.retry(options),
    });
    const part = [first, second && lostAck(second)].filter((m) => m !== undefined);
    if (part.length === 1) part[0] = lostAck(part[0]!);
    await worker.queue({ queue: batch.queue, messages: part }, env, ctx);
    throw new Error(`consumer crashed mid-batch (${tag})`);
  },
};
