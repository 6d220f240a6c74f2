import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jobJson, messageJson } from "./message-json.ts";
import type { JobSpec, OutboxMessage } from "./model.ts";

const job = fc.record({
  id: fc.string({ minLength: 1 }),
  tenant: fc.string(),
  handler: fc.string({ minLength: 1 }),
  input: fc.jsonValue(),
  priority: fc.integer(),
  timeoutMs: fc.double(),
  retries: fc.integer(),
  tags: fc.array(fc.string()),
  runAt: fc.double(),
  createdAt: fc.integer(),
}) as fc.Arbitrary<JobSpec>;

const message = fc.record(
  {
    id: fc.string({ minLength: 1 }),
    dedupId: fc.string({ minLength: 1 }),
    job,
    notBefore: fc.double(),
    recoverAt: fc.double(),
    attempt: fc.integer({ min: 0 }),
    reaps: fc.integer({ min: 0 }),
  },
  { requiredKeys: ["id", "dedupId", "job", "notBefore", "recoverAt"] },
) as fc.Arbitrary<OutboxMessage>;

describe("message JSON", () => {
  it("parses to what JSON.stringify(message) parses to, id and dedupId first", () => {
    fc.assert(
      fc.property(message, (m) => {
        const text = messageJson(m);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(m)));
        // The outbox scripts find a message's id and dedupId at the start of its text.
        expect(text.startsWith(`{"id":${JSON.stringify(m.id)},"dedupId":`)).toBe(true);
        expect(jobJson(m.job)).toBe(JSON.stringify(m.job));
      }),
    );
  });

  it("is written once per object: a new message or job object gets its own text", () => {
    const first: OutboxMessage = {
      id: "j1",
      dedupId: "j1",
      job: {
        id: "j1",
        tenant: "",
        handler: "h",
        input: 1,
        priority: 0,
        timeoutMs: 1,
        retries: 0,
        tags: [],
        runAt: 0,
        createdAt: 0,
      },
      notBefore: 0,
      recoverAt: 5,
    };
    expect(messageJson(first)).toBe(messageJson(first));
    const moved = { ...first, recoverAt: 9 };
    expect(JSON.parse(messageJson(moved)).recoverAt).toBe(9);
    const other = { ...first, job: { ...first.job, input: 2 } };
    expect(JSON.parse(messageJson(other)).job.input).toBe(2);
  });
});
