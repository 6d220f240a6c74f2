/**
 * `plainSpec` (the runner's reading of a delivery's spec without zod) against `jobSpecSchema`: on
 * any input, whatever `plainSpec` answers the schema accepts, and answers the same; on every spec
 * the store writes, `plainSpec` answers (so the schema runs only for odd bodies).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jobSpecSchema, plainSpec, readSpec } from "./delivery-spec.ts";

/** Values a field may hold in a hostile or damaged body, valid ones among them. */
const anyValue = fc.oneof(
  fc.string(),
  fc.constantFrom("", "allow", "skip", "x".repeat(300), "x".repeat(301), "__proto__"),
  fc.double(),
  fc.constantFrom(0, -0, 1.5, -1, 2 ** 53, 2 ** 53 - 1, 1e300, Infinity, -Infinity, Number.NaN),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.integer(), { maxKeys: 2 }),
);

/** The fields a spec must have, and those it may have. */
const REQUIRED = [
  "id",
  "tenant",
  "handler",
  "input",
  "priority",
  "timeoutMs",
  "retries",
  "tags",
  "runAt",
  "createdAt",
] as const;
const OPTIONAL = [
  "scheduleId",
  "fireAt",
  "overlap",
  "idempotencyKey",
  "placement",
  "trace",
] as const;

/** A spec as the store writes it. */
const wellFormed = fc.record(
  {
    id: fc.string({ minLength: 1, maxLength: 300 }),
    tenant: fc.string(),
    handler: fc.string(),
    input: fc.jsonValue(),
    priority: fc.integer({ min: 0, max: 10 }),
    timeoutMs: fc.integer({ min: 1_000, max: 900_000 }),
    retries: fc.integer({ min: 0, max: 20 }),
    tags: fc.array(fc.string(), { maxLength: 3 }),
    runAt: fc.integer({ min: 0, max: 8.64e15 }),
    createdAt: fc.integer({ min: 0, max: 8.64e15 }),
    scheduleId: fc.string(),
    fireAt: fc.integer({ min: 0, max: 8.64e15 }),
    overlap: fc.constantFrom("allow", "skip"),
    idempotencyKey: fc.string(),
    placement: fc.jsonValue(),
    trace: fc.jsonValue(),
  },
  { requiredKeys: [...REQUIRED] },
);

/** A well-formed spec with some fields replaced, dropped or added (inherited names too). */
const damaged = fc
  .tuple(
    wellFormed,
    fc.dictionary(
      fc.constantFrom(...REQUIRED, ...OPTIONAL, "constructor", "toString", "__proto__", "extra"),
      fc.option(anyValue, { nil: undefined }),
      { maxKeys: 3 },
    ),
  )
  .map(([spec, changes]) => {
    const out: Record<string, unknown> = { ...spec };
    for (const [key, value] of Object.entries(changes)) {
      if (value === undefined) delete out[key];
      else Object.defineProperty(out, key, { value, enumerable: true, writable: true });
    }
    return out;
  });

/** As a body arrives: JSON text parsed (`1e400` and `-0` as JSON makes them). */
const asParsed = (value: unknown) => JSON.parse(JSON.stringify(value) ?? "null") as unknown;

describe("plainSpec against jobSpecSchema", () => {
  it("answers only what the schema accepts, and the same; nothing for a body it refuses", () => {
    fc.assert(
      fc.property(fc.oneof(damaged, damaged.map(asParsed), fc.anything(), anyValue), (raw) => {
        const plain = plainSpec(raw);
        const parsed = jobSpecSchema.safeParse(raw);
        if (plain !== undefined) {
          expect(parsed.success).toBe(true);
          expect(plain).toEqual(parsed.data);
        }
        expect(readSpec(raw)).toEqual(parsed.success ? parsed.data : undefined);
      }),
      { numRuns: 3_000 },
    );
  });

  it("reads every well-formed spec itself, before and after a JSON round trip", () => {
    fc.assert(
      fc.property(wellFormed, (spec) => {
        for (const raw of [spec, asParsed(spec)]) {
          const plain = plainSpec(raw);
          expect(plain).toBeDefined();
          expect(plain).toEqual(jobSpecSchema.parse(raw));
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it("knows every field of the schema (a new one needs plainSpec and this test's arbitraries)", () => {
    expect(Object.keys(jobSpecSchema.shape).sort()).toEqual([...REQUIRED, ...OPTIONAL].sort());
  });

  it("keeps only the fields it knows, and no inherited name", () => {
    const raw = JSON.parse(
      '{"id":"j1","tenant":"t","handler":"h","input":null,"priority":5,"timeoutMs":1000,"retries":0,"tags":[],"runAt":1,"createdAt":1,"__proto__":{"polluted":1},"constructor":"x","extra":2}',
    ) as unknown;
    const plain = plainSpec(raw) as Record<string, unknown>;
    expect(Object.keys(plain).sort()).toEqual([
      "createdAt",
      "handler",
      "id",
      "input",
      "priority",
      "retries",
      "runAt",
      "tags",
      "tenant",
      "timeoutMs",
    ]);
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Numbers JSON cannot keep finite are refused, as the schema refuses them.
    expect(
      plainSpec(
        JSON.parse(
          '{"id":"j1","tenant":"t","handler":"h","input":1,"priority":1e400,"timeoutMs":1,"retries":0,"tags":[],"runAt":1,"createdAt":1}',
        ),
      ),
    ).toBeUndefined();
  });
});
