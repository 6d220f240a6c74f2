/**
 * `parseSubmitJob` checks the commonest submit body without zod: it must answer exactly what
 * `parseOrThrow(submitJobSchema, …)` answers, the same value or the same error, for any body.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseOrThrow, parseSubmitJob, submitJobSchema } from "./schemas.ts";

function outcome(parse: () => unknown): unknown {
  try {
    return { ok: parse() };
  } catch (error) {
    const e = error as { status?: number; code?: string; message?: string; errors?: unknown };
    return { status: e.status, code: e.code, message: e.message, errors: e.errors };
  }
}

const handlers = fc.oneof(
  fc.constantFrom("email.send", "a", "_x", "x".repeat(128), "x".repeat(129), "", "-x", "a b", "é"),
  fc.string(),
  fc.integer(),
  fc.constant(null),
);
const values = fc.jsonValue();
const bodies = fc.oneof(
  fc.record({ handler: handlers }, { requiredKeys: [] }),
  fc.record({ handler: handlers, input: values }, { requiredKeys: ["handler"] }),
  fc.record({ input: values, handler: handlers }, { requiredKeys: [] }),
  fc.dictionary(
    fc.constantFrom(
      "handler",
      "input",
      "delay",
      "runAt",
      "retries",
      "__proto__",
      "constructor",
      "x",
    ),
    fc.oneof(handlers, values),
  ),
  fc.jsonValue(),
);

describe("parseSubmitJob", () => {
  it("answers as the schema does, for any body (JSON-parsed, as the API reads it)", () => {
    fc.assert(
      fc.property(bodies, (body) => {
        const parsed = JSON.parse(JSON.stringify(body) ?? "null") as unknown;
        expect(outcome(() => parseSubmitJob(parsed))).toEqual(
          outcome(() => parseOrThrow(submitJobSchema, parsed, "job")),
        );
      }),
      { numRuns: 2_000 },
    );
  });

  it("a body whose own __proto__ key is JSON's goes to the schema", () => {
    const body = JSON.parse('{"handler":"a","__proto__":{"input":1}}') as unknown;
    expect(outcome(() => parseSubmitJob(body))).toEqual(
      outcome(() => parseOrThrow(submitJobSchema, body, "job")),
    );
  });
});
