/**
 * An endpoint's idempotency record lives as long as one signed delivery stays acceptable: a Slack
 * endpoint with a day's `toleranceSec` accepts the same request (timestamp up to 300 s ahead when
 * first seen) for a day and five minutes, so the record of its event must live that long, not
 * Slack's one-hour retry window (a resend after the hour made a second job). Real Redis (the
 * record's PTTL), over a real socket; and the window per scheme (`webhookDedupeMs`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_WEBHOOK_TOLERANCE_SEC,
  SENDER_RETRY_WINDOW_MS,
  WEBHOOK_FUTURE_SKEW_SEC,
  webhookDedupeMs,
} from "../../src/core/webhooks/index.ts";
import { call, type Harness, startHarness } from "../http/harness.ts";
import { makeRedisStore } from "../support/stores.ts";
import { recordingHandlers } from "./harness.ts";
import { slackSender } from "./senders.ts";

const DAY_SEC = 86_400;

/** The sender's configured secrets (its verifier is Slack's). */
function slackSecrets(): string[] {
  return (slack.verifier as { secrets: string[] }).secrets;
}

const slack = slackSender();

describe("how long a webhook event's idempotency record lives", () => {
  it("is the sender's retry window, or the span one signed delivery stays acceptable when longer", () => {
    const secrets = ["s"];
    expect(webhookDedupeMs({ scheme: "slack", secrets })).toBe(SENDER_RETRY_WINDOW_MS.slack);
    expect(webhookDedupeMs({ scheme: "slack", secrets, toleranceSec: DAY_SEC })).toBe(
      (DAY_SEC + WEBHOOK_FUTURE_SKEW_SEC) * 1_000,
    );
    expect(webhookDedupeMs({ scheme: "standard", secrets, toleranceSec: 2 * DAY_SEC })).toBe(
      4 * DAY_SEC * 1_000,
    );
    expect(
      webhookDedupeMs({ scheme: "hmac", secrets, header: "x-sig", timestampHeader: "x-ts" }),
    ).toBe(SENDER_RETRY_WINDOW_MS.hmac);
    expect(webhookDedupeMs({ scheme: "github", secrets })).toBe(SENDER_RETRY_WINDOW_MS.github);
    expect(DEFAULT_WEBHOOK_TOLERANCE_SEC * 2 * 1_000).toBeLessThan(SENDER_RETRY_WINDOW_MS.slack);
  });

  describe("through the route, on Redis", () => {
    let handle: Awaited<ReturnType<typeof makeRedisStore>>;
    let h: Harness;
    beforeAll(async () => {
      handle = await makeRedisStore();
      h = await startHarness({
        store: handle.store,
        handlers: recordingHandlers().handlers,
        app: {
          webhooks: {
            slack: {
              verifier: {
                scheme: "slack" as const,
                secrets: slackSecrets(),
                toleranceSec: DAY_SEC,
              },
              handler: "hook.receive",
            },
          },
        },
      });
    });
    afterAll(async () => {
      await h?.close();
      await handle?.cleanup();
    });

    it("a Slack endpoint with a day's tolerance keeps its event's record a day and five minutes", async () => {
      const body = slack.body("Ev_dedupe_1");
      const answer = await call(h.origin, "POST", "/v1/hooks/slack", {
        body,
        headers: await slack.sign(body, "Ev_dedupe_1"),
      });
      expect(answer.status).toBe(202);
      const keys = (await handle.redis.keys(`{${handle.prefix}}:idem:*`)).filter((k) =>
        k.includes("Ev_dedupe_1"),
      );
      expect(keys).toHaveLength(1);
      const ttl = await handle.redis.pttl(keys[0]!);
      expect(ttl).toBeGreaterThan((DAY_SEC + WEBHOOK_FUTURE_SKEW_SEC) * 1_000 - 60_000);
    });
  });
});
