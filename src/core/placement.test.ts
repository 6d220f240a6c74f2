import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { normalPlacement, placementMismatch, placementSchema } from "./placement.ts";
import { parseOrThrow, submitJobSchema } from "./schemas.ts";

const node = { id: "gpu-1", capabilities: { gpu: "nvidia", zone: "b" } };

describe("placementMismatch", () => {
  it("no placement runs on any node of the default group, none of another group's", () => {
    expect(placementMismatch(undefined, node)).toBeUndefined();
    expect(placementMismatch(undefined, { ...node, group: "gpu" })).toMatch(/default group/);
    expect(placementMismatch({}, node)).toBeUndefined();
  });

  it("a group runs only on nodes of that group", () => {
    expect(placementMismatch({ group: "gpu" }, { ...node, group: "gpu" })).toBeUndefined();
    expect(placementMismatch({ group: "gpu" }, node)).toBe('job needs group "gpu"');
    expect(placementMismatch({ group: "gpu" }, { ...node, group: "arm" })).toBe(
      'job needs group "gpu"',
    );
  });

  it("capabilities match exactly, by own properties only", () => {
    expect(placementMismatch({ capabilities: { gpu: "nvidia" } }, node)).toBeUndefined();
    expect(placementMismatch({ capabilities: { gpu: "amd" } }, node)).toBe(
      "job needs capability gpu=amd",
    );
    expect(placementMismatch({ capabilities: { ram: "" } }, node)).toBe(
      "job needs capability ram=",
    );
    // An inherited name is never a capability the node has.
    expect(placementMismatch({ capabilities: { toString: "x" } }, node)).toMatch(/toString/);
    expect(placementMismatch({ capabilities: { gpu: "nvidia" } }, { id: "n" })).toMatch(/gpu/);
  });

  it("allowed and forbidden nodes by id", () => {
    expect(placementMismatch({ nodes: ["gpu-1", "gpu-2"] }, node)).toBeUndefined();
    expect(placementMismatch({ nodes: ["gpu-2"] }, node)).toBe("node not in `nodes`");
    expect(placementMismatch({ notNodes: ["gpu-1"] }, node)).toBe("node in `notNodes`");
    expect(placementMismatch({ notNodes: ["gpu-2"] }, node)).toBeUndefined();
  });

  it("property: a node built from a placement matches it; dropping a required capability does not", () => {
    const name = fc.stringMatching(/^[a-z]{1,8}$/);
    fc.assert(
      fc.property(fc.dictionary(name, name, { minKeys: 1, maxKeys: 5 }), (caps) => {
        const placement = { capabilities: caps };
        expect(
          placementMismatch(placement, { id: "n", capabilities: { ...caps, extra: "1" } }),
        ).toBeUndefined();
        const [first] = Object.keys(caps);
        const { [first!]: _dropped, ...fewer } = caps;
        expect(placementMismatch(placement, { id: "n", capabilities: fewer })).toBeDefined();
      }),
    );
  });
});

describe("placementSchema", () => {
  it("refuses unknown fields, inherited names, broken Unicode and oversized lists", () => {
    const bad = [
      { where: "x" },
      JSON.parse('{"capabilities":{"__proto__":"x"}}'),
      { capabilities: { constructor: "x" } },
      { capabilities: { gpu: "\ud800" } },
      { capabilities: { gpu: "a\u0000b" } },
      { capabilities: { gpu: 1 } },
      { capabilities: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`c${i}`, "1"])) },
      { group: "has space" },
      { group: "" },
      { group: "g".repeat(65) },
      { nodes: [] },
      { nodes: Array.from({ length: 33 }, (_, i) => `n${i}`) },
      { notNodes: ["x".repeat(201)] },
    ];
    for (const value of bad)
      expect(placementSchema.safeParse(value).success, JSON.stringify(value)).toBe(false);
  });

  it("a bad placement in a submit is a 4xx naming the field", () => {
    let error: unknown;
    try {
      parseOrThrow(submitJobSchema, { handler: "h", placement: { group: "a b" } }, "job");
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ status: 400, errors: [{ path: "placement.group" }] });
  });

  it("normalPlacement drops what is empty and repeated", () => {
    expect(normalPlacement({})).toBeUndefined();
    expect(normalPlacement({ capabilities: {} })).toBeUndefined();
    expect(normalPlacement({ nodes: ["a", "a", "b"] })).toEqual({ nodes: ["a", "b"] });
  });
});
