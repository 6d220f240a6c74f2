/**
 * @module
 * An outbox message as the transports take it, for tests: a module without hooks or connections,
 * so a file that runs with others in one process may import it (test/architecture/isolation.test.ts).
 */
import type { JobSpec, OutboxMessage } from "../../src/core/model.ts";

let seq = 0;
export function message(opts: { retries?: number; notBefore?: number; dedupId?: string } = {}) {
  const id = `job-${++seq}`;
  const job: JobSpec = {
    id,
    tenant: "default",
    handler: "email.send",
    input: { to: "a@example.com", note: "héllo 🚀" },
    priority: 5,
    timeoutMs: 30_000,
    retries: opts.retries ?? 3,
    tags: ["t"],
    runAt: 0,
    createdAt: 0,
  };
  const msg: OutboxMessage = {
    id,
    dedupId: opts.dedupId ?? id,
    job,
    notBefore: opts.notBefore ?? 0,
    recoverAt: 0,
  };
  return msg;
}
