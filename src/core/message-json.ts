/**
 * @module
 * The JSON text of a job and of an outbox message, written once per job object. A tick writes
 * every occurrence's message to the outbox (the job inside it) and then hands the same job to the
 * queue as its body; serialising the job once for both halves the tick's JSON work (see
 * docs/adr/0026-one-json-text-per-job.md).
 *
 * A job is not changed once it is planned or submitted (every step that changes one makes a new
 * object), so the text cached for it stays true.
 */
import type { JobSpec, OutboxMessage } from "./model.ts";

const texts = new WeakMap<JobSpec, string>();
const messageTexts = new WeakMap<OutboxMessage, string>();

/** `JSON.stringify(job)`, computed once per job object. */
export function jobJson(job: JobSpec): string {
  let text = texts.get(job);
  if (text === undefined) {
    text = JSON.stringify(job);
    texts.set(job, text);
  }
  return text;
}

/**
 * Remember `text` as `job`'s JSON, for a caller that already holds it: it must be what
 * `JSON.stringify(job)` gives (the submit path builds it from the text it stored).
 */
export function rememberJobJson(job: JobSpec, text: string): void {
  texts.set(job, text);
}

/**
 * `message` as JSON, its fields in their own order (`id` and `dedupId` first, which the outbox
 * scripts rely on) and `job` last, from {@link jobJson}: parses to what `JSON.stringify(message)`
 * does. Computed once per message object (messages, too, are replaced, never changed).
 */
export function messageJson(message: OutboxMessage): string {
  let text = messageTexts.get(message);
  if (text === undefined) {
    const { job, ...rest } = message;
    const head = JSON.stringify(rest);
    const body = jobJson(job);
    text = head === "{}" ? `{"job":${body}}` : `${head.slice(0, -1)},"job":${body}}`;
    messageTexts.set(message, text);
  }
  return text;
}
