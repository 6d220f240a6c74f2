import { describe, expect, it } from "vitest";
import { serverOptionsFromEnv } from "./env.ts";
import { StartError } from "./errors.ts";
import { parseWorkerGroups, placementFromEnv } from "./placement-env.ts";
import { startServer } from "./start.ts";

describe("placement settings from the environment", () => {
  it("reads node id, group and worker groups; unset or empty is absent", () => {
    expect(placementFromEnv({})).toEqual({});
    expect(placementFromEnv({ TICKWORK_GROUP: " ", TICKWORK_NODE_ID: "" })).toEqual({});
    expect(
      placementFromEnv({
        TICKWORK_NODE_ID: "gpu-1",
        TICKWORK_GROUP: "gpu",
        TICKWORK_WORKER_GROUPS: '{"gpu":"https://gpu.example.com/v1/worker"}',
      }),
    ).toEqual({
      nodeId: "gpu-1",
      group: "gpu",
      workerGroups: { gpu: "https://gpu.example.com/v1/worker" },
    });
    const options = serverOptionsFromEnv({ TICKWORK_GROUP: "gpu", TICKWORK_NODE_ID: "n-1" }, "dev");
    expect(options).toMatchObject({ group: "gpu", nodeId: "n-1" });
  });

  it("refuses malformed values, naming the variable", () => {
    const bad: Record<string, string>[] = [
      { TICKWORK_NODE_ID: "has space" },
      { TICKWORK_NODE_ID: "x".repeat(201) },
      { TICKWORK_NODE_ID: "k-\ud800" },
      { TICKWORK_GROUP: "a b" },
      { TICKWORK_GROUP: "g".repeat(65) },
      { TICKWORK_WORKER_GROUPS: "not json" },
      { TICKWORK_WORKER_GROUPS: "[]" },
      { TICKWORK_WORKER_GROUPS: '{"gpu":"ftp://x"}' },
      { TICKWORK_WORKER_GROUPS: '{"gpu":1}' },
      { TICKWORK_WORKER_GROUPS: '{"a b":"https://x"}' },
      { TICKWORK_WORKER_GROUPS: '{"__proto__":"https://x"}' },
    ];
    for (const env of bad) {
      const variable = Object.keys(env)[0];
      expect(() => placementFromEnv(env), JSON.stringify(env)).toThrow(
        expect.objectContaining({ variable }),
      );
    }
  });

  it("worker groups come back as a plain object, without inherited names", () => {
    const groups = parseWorkerGroups('{"gpu":"https://gpu.example.com/v1/worker"}');
    expect(Object.getPrototypeOf(groups)).toBe(Object.prototype);
    expect(Object.keys(groups)).toEqual(["gpu"]);
  });
});

describe("startServer in a worker group with QStash", () => {
  const base = {
    handlers: {},
    dev: true,
    port: 0,
    signals: false,
    print: false,
    publicUrl: "https://gpu.example.com",
    qstash: {
      token: "t",
      currentSigningKey: "sig_current",
      nextSigningKey: "sig_next",
    },
    group: "gpu",
  } as const;

  it("refuses api or tick roles without a default-group URL, before opening anything", async () => {
    const refused = await startServer(base).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StartError);
    expect(refused).toMatchObject({ variable: "TICKWORK_WORKER_GROUPS" });
    expect((refused as Error).message).toMatch(/"default"/);
  });
});
