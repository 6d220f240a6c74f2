/**
 * Hostile input to the webhook verifiers: `webhookVerifierSchema` refuses unbounded or unusable
 * settings (unknown keys and `__proto__`, too many or huge secrets, a Standard Webhooks secret
 * that does not decode, bad header names, tolerances out of range); `verifyWebhook` answers
 * non-numeric, negative, exponent and absurd timestamps, oversized headers, too many signatures
 * and non-hex/non-base64 signatures with the right reason; and, property-tested with fast-check,
 * never throws on random headers, bodies, clocks and verifiers, and refuses any changed byte of
 * a genuinely signed random body.
 */
import { createHmac, randomBytes } from "node:crypto";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import {
  type VerifyResult,
  verifyWebhook,
  type WebhookVerifier,
  webhookVerifierSchema,
} from "../../src/core/index.ts";
import { hmacHex, NOW, NOW_MS, refused, request } from "./support.ts";

const REASONS = [
  "missing_signature",
  "bad_signature",
  "stale_timestamp",
  "bad_timestamp",
  "malformed",
];

describe("webhookVerifierSchema", () => {
  const ok = (value: unknown) => expect(webhookVerifierSchema.safeParse(value).success).toBe(true);
  const bad = (value: unknown) =>
    expect(webhookVerifierSchema.safeParse(value).success).toBe(false);

  it("accepts each scheme's settings", () => {
    ok({
      scheme: "standard",
      secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
      toleranceSec: 600,
    });
    ok({ scheme: "stripe", secrets: ["whsec_test_secret", "whsec_next"] });
    ok({ scheme: "github", secrets: ["It's a Secret to Everybody"] });
    ok({ scheme: "slack", secrets: ["8f742231b10e8888abcd99yyyzzz85a5"], toleranceSec: 1 });
    ok({ scheme: "shopify", secrets: ["hush"] });
    ok({
      scheme: "hmac",
      secrets: ["s"],
      header: "X-Signature",
      algorithm: "SHA-512",
      encoding: "base64",
      prefix: "sha512=",
      timestampHeader: "X-Timestamp",
      toleranceSec: 86_400,
      separator: "",
      idHeader: "X-Id",
    });
  });

  it("refuses unknown keys, __proto__ included, and unknown schemes", () => {
    bad({ scheme: "github", secrets: ["s"], toleranceSec: 300 });
    bad(JSON.parse('{"scheme":"github","secrets":["s"],"__proto__":{"admin":true}}'));
    bad({ scheme: "constructor", secrets: ["s"] });
    bad({ scheme: "hmac", secrets: ["s"] }); // no header
  });

  it("bounds the secrets: 1–8, each 1–512 chars; a Standard Webhooks secret must decode", () => {
    bad({ scheme: "github", secrets: [] });
    bad({ scheme: "github", secrets: Array.from({ length: 9 }, (_, i) => `s${i}`) });
    ok({ scheme: "github", secrets: Array.from({ length: 8 }, (_, i) => `s${i}`) });
    bad({ scheme: "github", secrets: [""] });
    bad({ scheme: "github", secrets: ["x".repeat(513)] });
    ok({ scheme: "github", secrets: ["x".repeat(512)] });
    bad({ scheme: "github", secrets: [42] });
    bad({ scheme: "standard", secrets: ["whsec_not base64!"] });
    bad({ scheme: "standard", secrets: ["whsec_"] });
    bad({ scheme: "standard", secrets: ["whsec_A"] }); // one base64 char is no byte
    ok({ scheme: "standard", secrets: [randomBytes(32).toString("base64")] }); // prefix optional
  });

  it("refuses bad header names, tolerances out of range, oversized prefixes", () => {
    const hmac = { scheme: "hmac", secrets: ["s"], header: "x-sig" };
    bad({ ...hmac, header: "x sig" });
    bad({ ...hmac, header: "" });
    bad({ ...hmac, header: "x-sig\r\nx-evil: 1" });
    bad({ ...hmac, timestampHeader: "ts:" });
    bad({ ...hmac, idHeader: "ü" });
    for (const toleranceSec of [0, -1, 1.5, 86_401, Number.NaN, 1e300, "300"]) {
      bad({ ...hmac, toleranceSec });
      bad({ scheme: "stripe", secrets: ["s"], toleranceSec });
    }
    bad({ ...hmac, prefix: "x".repeat(65) });
    bad({ ...hmac, separator: "\n" });
    bad({ ...hmac, algorithm: "MD5" });
    bad({ ...hmac, encoding: "base32" });
  });
});

/** A Standard Webhooks verifier with a fresh secret, the id and timestamp headers of message
 * `msg_1` at NOW, and the Svix library's signature of `body`. */
function standardSigned(body: string) {
  const standard: WebhookVerifier = {
    scheme: "standard",
    secrets: [`whsec_${randomBytes(24).toString("base64")}`],
  };
  const h = { "webhook-id": "msg_1", "webhook-timestamp": String(NOW) };
  const wh = new Webhook(standard.secrets[0]!).sign("msg_1", new Date(NOW * 1000), body);
  return { standard, h, wh };
}

describe("verifyWebhook on hostile input", () => {
  const secret = "stripe-secret";
  const stripe: WebhookVerifier = { scheme: "stripe", secrets: [secret] };
  const body = '{"id":"evt_1"}';

  it("non-numeric, negative, exponent, fractional or absurd timestamps: bad or stale, no throw", async () => {
    for (const t of [
      "abc",
      "-5",
      "1e300",
      "1e9",
      "0x10",
      "1700000000.5",
      "\u00b9\u00b2\u00b3",
      "",
      "1".repeat(13),
    ]) {
      const header = `t=${t},v1=${hmacHex(secret, `${t}.${body}`)}`;
      const result = await verifyWebhook(
        stripe,
        request(body, { "stripe-signature": header }),
        NOW_MS,
      );
      refused(result, "bad_timestamp");
    }
    for (const t of ["0", "999999999999", "000000000001"]) {
      const header = `t=${t},v1=${hmacHex(secret, `${t}.${body}`)}`;
      const result = await verifyWebhook(
        stripe,
        request(body, { "stripe-signature": header }),
        NOW_MS,
      );
      refused(result, "stale_timestamp");
    }
    const slack: WebhookVerifier = { scheme: "slack", secrets: [secret] };
    for (const ts of ["-1", "1e300", "Infinity", "NaN", " "]) {
      const headers = {
        "x-slack-request-timestamp": ts,
        "x-slack-signature": `v0=${"0".repeat(64)}`,
      };
      refused(await verifyWebhook(slack, request(body, headers), NOW_MS), "bad_timestamp");
    }
  });

  it("a leading-zero timestamp is signed as sent", async () => {
    const t = `0${NOW}`;
    const header = `t=${t},v1=${hmacHex(secret, `${t}.${body}`)}`;
    expect(
      await verifyWebhook(stripe, request(body, { "stripe-signature": header }), NOW_MS),
    ).toEqual({
      ok: true,
      eventId: "evt_1",
      timestampSec: NOW,
    });
  });

  it("oversized headers, too many signatures, non-hex and non-base64: malformed", async () => {
    const good = `v1=${hmacHex(secret, `${NOW}.${body}`)}`;
    const huge = `t=${NOW},${good},${"v1=00,".repeat(700)}`;
    refused(
      await verifyWebhook(stripe, request(body, { "stripe-signature": huge }), NOW_MS),
      "malformed",
    );
    const many = `t=${NOW},${Array.from({ length: 16 }, () => "v1=00").join(",")},${good}`;
    refused(
      await verifyWebhook(stripe, request(body, { "stripe-signature": many }), NOW_MS),
      "malformed",
    );
    const notHex = `t=${NOW},v1=${"zz".repeat(32)}`;
    refused(
      await verifyWebhook(stripe, request(body, { "stripe-signature": notHex }), NOW_MS),
      "malformed",
    );
    const github: WebhookVerifier = { scheme: "github", secrets: [secret] };
    for (const sig of ["sha256=xyz", "sha256=abc", "sha256=", "sha1=00", "sha256=ü"]) {
      refused(
        await verifyWebhook(github, request(body, { "x-hub-signature-256": sig }), NOW_MS),
        "malformed",
      );
    }
    const { standard, h, wh } = standardSigned(body);
    expect(
      await verifyWebhook(standard, request(body, { ...h, "webhook-signature": wh }), NOW_MS),
    ).toMatchObject({ ok: true });
    const padded = `${wh}${" ".repeat(4100)}${wh}`; // two entries, but past the 4 KiB cap
    refused(
      await verifyWebhook(standard, request(body, { ...h, "webhook-signature": padded }), NOW_MS),
      "malformed",
    );
    const seventeen = Array.from({ length: 17 }, () => "v1,AAAA").join(" ");
    refused(
      await verifyWebhook(
        standard,
        request(body, { ...h, "webhook-signature": seventeen }),
        NOW_MS,
      ),
      "malformed",
    );
    refused(
      await verifyWebhook(
        standard,
        request(body, { ...h, "webhook-signature": "v1,**notb64**" }),
        NOW_MS,
      ),
      "malformed",
    );
    refused(
      await verifyWebhook(
        standard,
        request(body, { ...h, "webhook-signature": "v1,AAAA" }),
        NOW_MS,
      ),
      "bad_signature",
    );
  });

  it("an entry that is not well-formed beside a good signature is skipped, as the senders' libraries skip it", async () => {
    const good = `v1=${hmacHex(secret, `${NOW}.${body}`)}`;
    expect(
      await verifyWebhook(
        stripe,
        request(body, { "stripe-signature": `t=${NOW},v1=${"zz".repeat(32)},${good}` }),
        NOW_MS,
      ),
    ).toMatchObject({ ok: true });
    const { standard, h, wh } = standardSigned(body);
    expect(
      await verifyWebhook(
        standard,
        request(body, { ...h, "webhook-signature": `v1,**notb64** ${wh}` }),
        NOW_MS,
      ),
    ).toMatchObject({ ok: true });
    // The Svix library agrees: it verifies the same header.
    expect(() =>
      new Webhook(standard.secrets[0]!).verify(body, {
        "webhook-id": "msg_1",
        "webhook-timestamp": String(NOW),
        "webhook-signature": `v1,**notb64** ${wh}`,
      }),
    ).not.toThrow();
  });

  it("an event id header that is not 1–256 visible ASCII chars is left out, not trusted", async () => {
    const github: WebhookVerifier = { scheme: "github", secrets: [secret] };
    const sig = { "x-hub-signature-256": `sha256=${hmacHex(secret, body)}` };
    for (const delivery of ["a b", "x".repeat(257), "caf\u00e9"]) {
      const result = await verifyWebhook(
        github,
        request(body, { ...sig, "x-github-delivery": delivery }),
        NOW_MS,
      );
      expect(result).toEqual({ ok: true });
    }
    const longest = "x".repeat(256);
    const result = await verifyWebhook(
      github,
      request(body, { ...sig, "x-github-delivery": longest }),
      NOW_MS,
    );
    expect(result).toEqual({ ok: true, eventId: longest });
  });

  it("a wrong-length but well-formed signature is just a bad signature", async () => {
    const github: WebhookVerifier = { scheme: "github", secrets: [secret] };
    const short = `sha256=${hmacHex(secret, body).slice(0, 62)}`;
    refused(
      await verifyWebhook(github, request(body, { "x-hub-signature-256": short }), NOW_MS),
      "bad_signature",
    );
  });

  it("an unusable clock, request or verifier is refused, not thrown", async () => {
    const h = { "stripe-signature": `t=${NOW},v1=${hmacHex(secret, `${NOW}.${body}`)}` };
    for (const now of [Number.NaN, Number.POSITIVE_INFINITY, "now" as unknown as number]) {
      refused(await verifyWebhook(stripe, request(body, h), now), "malformed");
    }
    const asAny = (v: unknown) => v as WebhookVerifier;
    for (const verifier of [
      null,
      {},
      { scheme: "nope", secrets: ["s"] },
      { scheme: "github" },
      { scheme: "github", secrets: [1] },
      { scheme: "hmac", secrets: ["s"], header: "bad header" },
      { scheme: "hmac", secrets: ["s"], header: "x", algorithm: "MD5" },
      { scheme: "standard", secrets: ["whsec_!!"] },
      { scheme: "github", secrets: [""] },
    ]) {
      const headers = {
        ...h,
        "x-hub-signature-256": "sha256=00",
        "webhook-signature": "v1,AAAA",
        "webhook-id": "m",
        "webhook-timestamp": String(NOW),
      };
      const result = await verifyWebhook(asAny(verifier), request(body, headers), NOW_MS);
      expect(result.ok).toBe(false);
      expect(REASONS).toContain((result as { reason: string }).reason);
    }
    refused(
      await verifyWebhook(
        stripe,
        { body: "text" as unknown as Uint8Array, headers: new Headers(h) },
        NOW_MS,
      ),
      "malformed",
    );
    refused(await verifyWebhook(stripe, null as never, NOW_MS), "malformed");
  });

  it("a tolerance that is no whole number of seconds in 1–86400 is malformed, never open", async () => {
    // Signed in 2001: any window the schema allows calls it stale.
    const old = 1_000_000_000;
    const stripeOld = { "stripe-signature": `t=${old},v1=${hmacHex(secret, `${old}.${body}`)}` };
    const slackOld = {
      "x-slack-request-timestamp": String(old),
      "x-slack-signature": `v0=${hmacHex(secret, `v0:${old}:${body}`)}`,
    };
    const hmacOld = {
      "x-signature": hmacHex(secret, `${old}.${body}`),
      "x-timestamp": String(old),
    };
    const hmac = { header: "X-Signature", timestampHeader: "X-Timestamp" };
    for (const toleranceSec of [
      Number.NaN,
      Number.POSITIVE_INFINITY,
      1e300,
      -1,
      0,
      1.5,
      86_401,
      "300" as unknown as number,
    ]) {
      for (const [verifier, headers] of [
        [{ scheme: "stripe", secrets: [secret], toleranceSec }, stripeOld],
        [{ scheme: "slack", secrets: [secret], toleranceSec }, slackOld],
        [{ scheme: "hmac", secrets: [secret], ...hmac, toleranceSec }, hmacOld],
      ] as const) {
        const result = await verifyWebhook(
          verifier as unknown as WebhookVerifier,
          request(body, headers),
          NOW_MS,
        );
        refused(result, "malformed");
      }
    }
    // In range, the same old signatures are stale, and a fresh one passes.
    refused(
      await verifyWebhook(
        { scheme: "stripe", secrets: [secret], toleranceSec: 86_400 },
        request(body, stripeOld),
        NOW_MS,
      ),
      "stale_timestamp",
    );
    const fresh = { "stripe-signature": `t=${NOW},v1=${hmacHex(secret, `${NOW}.${body}`)}` };
    expect(
      (await verifyWebhook({ ...stripe, toleranceSec: 1 }, request(body, fresh), NOW_MS)).ok,
    ).toBe(true);
  });

  it("property: never throws on random headers, bodies, clocks and verifiers", async () => {
    const latin1 = fc.string({
      unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)),
      maxLength: 300,
    });
    const names = [
      "webhook-id",
      "webhook-timestamp",
      "webhook-signature",
      "svix-id",
      "svix-timestamp",
      "svix-signature",
      "stripe-signature",
      "x-hub-signature-256",
      "x-github-delivery",
      "x-slack-signature",
      "x-slack-request-timestamp",
      "x-shopify-hmac-sha256",
      "x-shopify-webhook-id",
      "x-sig",
      "x-ts",
      "x-id",
    ];
    const value = fc.oneof(
      latin1,
      fc
        .constantFrom("v1,", "t=", "v1=", "sha256=", "v0=", "", " ", "__proto__")
        .chain((p) => latin1.map((s) => p + s)),
      fc.integer().map(String),
      fc.double().map(String),
      fc
        .string({ unit: fc.constantFrom(..."0123456789abcdef"), maxLength: 130 })
        .map((s) => `sha256=${s}`),
      fc.base64String({ maxLength: 100 }).map((s) => `v1,${s}`),
      fc.constant("x".repeat(5000)),
    );
    const verifier = fc.constantFrom<WebhookVerifier>(
      { scheme: "standard", secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] },
      { scheme: "stripe", secrets: ["a", "b"] },
      { scheme: "github", secrets: ["a"] },
      { scheme: "slack", secrets: ["a"], toleranceSec: 1 },
      { scheme: "shopify", secrets: ["a"] },
      {
        scheme: "hmac",
        secrets: ["a"],
        header: "x-sig",
        timestampHeader: "x-ts",
        idHeader: "x-id",
        encoding: "base64",
      },
      { scheme: "hmac", secrets: ["a"], header: "x-sig", prefix: "sha256=", algorithm: "SHA-1" },
    );
    const headers = fc.dictionary(
      fc.oneof(fc.constantFrom(...names), fc.constantFrom("__proto__", "constructor", "x-a")),
      value,
      { maxKeys: 8 },
    );
    const now = fc.oneof(
      fc.constant(NOW_MS),
      fc.double(),
      fc.integer(),
      fc.constantFrom(-1, 0, 1e300, -1e300, Number.MAX_VALUE),
    );
    await fc.assert(
      fc.asyncProperty(
        verifier,
        headers,
        fc.uint8Array({ maxLength: 512 }),
        now,
        async (v, h, b, n) => {
          const result: VerifyResult = await verifyWebhook(
            v,
            { body: b, headers: new Headers(h) },
            n,
          );
          expect(typeof result.ok).toBe("boolean");
          if (!result.ok) {
            expect(REASONS).toContain(result.reason);
            expect(typeof result.detail).toBe("string");
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it("property: a genuinely signed random body passes, and any one changed byte is refused", async () => {
    const github: WebhookVerifier = { scheme: "github", secrets: ["k1", "k2"] };
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 256 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        async (b, at, flip) => {
          const sig = `sha256=${createHmac("sha256", "k2").update(b).digest("hex")}`;
          const headers = new Headers({ "x-hub-signature-256": sig });
          expect(await verifyWebhook(github, { body: b, headers }, NOW_MS)).toEqual({ ok: true });
          const changed = b.slice();
          changed[at % b.length]! ^= flip;
          refused(await verifyWebhook(github, { body: changed, headers }, NOW_MS), "bad_signature");
        },
      ),
      { numRuns: 200 },
    );
  });
});
