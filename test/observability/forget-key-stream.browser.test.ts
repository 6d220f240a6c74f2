/**
 * "Forget key" on the dashboard stops the page using that key, and a key entered after it is the
 * one used. An open job's live stream (`GET /v1/jobs/:id/stream`) captured the key when it was
 * opened and kept reconnecting with it (every `stream.maxMs`) after the key was forgotten or
 * replaced.
 */
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness } from "../http/harness.ts";
import { noBrowser, useChromium } from "./browser.ts";

describe.skipIf(noBrowser !== undefined)("the dashboard's Forget key", () => {
  const browser = useChromium();
  let server: Harness | undefined;
  let page: Page | undefined;
  let release: () => void = () => {};

  afterEach(async () => {
    release();
    await page?.close();
    await server?.close();
  });

  it("sends the forgotten key on no request afterwards, the open job's stream included; a new key follows the job", async () => {
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: { hold: { run: async () => released } },
      // Streams end after 300 ms, so the page reconnects often.
      app: { apiKeys: ["secret-key", "other-key"], stream: { maxMs: 300 } },
    });
    server = h;
    const auth = { authorization: "Bearer secret-key" };
    const submitted = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "hold" },
      headers: auth,
    });
    const id = submitted.body.id as string;
    await expect
      .poll(
        async () => (await call(h.origin, "GET", `/v1/jobs/${id}`, { headers: auth })).body.status,
      )
      .toBe("running");

    page = await browser().newPage();
    const p = page;
    /** [phase, url, authorization] of every request the page makes. */
    const seen: { after: boolean; url: string; key: string | undefined }[] = [];
    let forgotten = false;
    p.on("request", (r) => {
      if (r.resourceType() === "fetch")
        seen.push({ after: forgotten, url: r.url(), key: r.headers().authorization });
    });
    await p.goto(`${h.origin}/dashboard?refresh=60`);
    await p.getByRole("textbox", { name: "Key" }).fill("secret-key");
    await p.getByRole("button", { name: "Use this key" }).click();
    await p.getByRole("button", { name: `Show job ${id}` }).click();
    await expect
      .poll(() => seen.filter((s) => s.url.endsWith("/stream")).length, { timeout: 10_000 })
      .toBeGreaterThan(1);

    await p.getByRole("button", { name: "Forget key" }).click();
    await p.getByRole("textbox", { name: "Key" }).waitFor();
    // From here on no request may carry the forgotten key; the next key follows the job again.
    forgotten = true;
    await p.getByRole("textbox", { name: "Key" }).fill("other-key");
    await p.getByRole("button", { name: "Use this key" }).click();
    await expect
      .poll(
        () =>
          seen.filter((s) => s.after && s.url.endsWith("/stream") && s.key === "Bearer other-key")
            .length,
        { timeout: 10_000 },
      )
      .toBeGreaterThan(1);
    const leaked = seen.filter((s) => s.after && s.key === "Bearer secret-key").map((s) => s.url);
    expect(leaked).toEqual([]);
  }, 60_000);
});
