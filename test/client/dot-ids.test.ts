/**
 * Ids the API can never have made ("", ".", "..") answer NotFoundError through the client, as
 * docs/api.md "Ids in paths" says: the URL parser drops an empty or dot segment (and so a `.` id
 * encoded once, `%2E`), so `/v1/schedules/./runs` would reach the schedule named `runs`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, NotFoundError, type TickworkClient } from "../../src/client/index.ts";
import { defineHandlers } from "../../src/engine/handlers.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { type Harness, startHarness } from "../http/harness.ts";

let h: Harness;
let client: TickworkClient;
beforeAll(async () => {
  h = await startHarness({
    store: new MemoryStore(),
    handlers: defineHandlers({ echo: { run: (input: unknown) => input } }),
  });
  client = createClient({ url: h.origin });
  await client.jobs.submit({ handler: "echo", input: 1 });
  await client.schedules.create({ id: "runs", handler: "echo", schedule: "1h" });
});
afterAll(async () => h?.close());

const outcome = (p: Promise<unknown>) =>
  p.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ rejected: (error as Error).name }),
  );

describe("ids that name nothing", () => {
  for (const id of ["", ".", ".."]) {
    it(`jobs.get(${JSON.stringify(id)}) → NotFoundError`, async () => {
      expect(await outcome(client.jobs.get(id))).toEqual({ rejected: "NotFoundError" });
    });
    it(`schedules.get(${JSON.stringify(id)}) → NotFoundError`, async () => {
      expect(await outcome(client.schedules.get(id))).toEqual({ rejected: "NotFoundError" });
    });
    it(`schedules.handle(${JSON.stringify(id)}).runs() → NotFoundError`, async () => {
      expect(await outcome(client.schedules.handle(id).runs().first())).toEqual({
        rejected: "NotFoundError",
      });
    });
  }
  it("NotFoundError is what an invalid id like 'a@b' answers (control)", async () => {
    await expect(client.jobs.get("a@b")).rejects.toBeInstanceOf(NotFoundError);
  });
});
