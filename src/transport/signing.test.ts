import { createHash } from "node:crypto";
import { Receiver } from "@upstash/qstash";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { checkSignature, deliveryToken, signDelivery, verifySignature } from "./signing.ts";

const currentSigningKey = "sig_current_7kYjw48mhY7kAjqNGcy6cr29RJ6r";
const nextSigningKey = "sig_next_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs";
const url = "https://app.example/v1/worker";
const body = JSON.stringify({ id: "job-1", input: { emoji: "🚀", text: "a\nb" } });

const receiver = new Receiver({ currentSigningKey, nextSigningKey });

/** Signs the way the SDK's own test signer does: jose, unpadded node:crypto body hash. */
async function sdkSignature(opts: {
  key: string;
  url: string;
  body: string;
  iat?: number;
  ttl?: number;
  claims?: Record<string, unknown>;
}): Promise<string> {
  const iat = opts.iat ?? Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: "Upstash",
    sub: opts.url,
    iat,
    nbf: iat,
    exp: iat + (opts.ttl ?? 300),
    jti: `jwt_${Math.random().toString(36).slice(2)}`,
    body: createHash("sha256").update(opts.body).digest("base64url"),
    ...opts.claims,
  })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .sign(new TextEncoder().encode(opts.key));
}

function decodePart(token: string, index: number): Record<string, unknown> {
  const part = token.split(".")[index]!;
  return JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
}

describe("signDelivery", () => {
  it("makes an HS256 JWT with QStash's claims", async () => {
    const before = Math.floor(Date.now() / 1000);
    const token = await signDelivery({ signingKey: currentSigningKey, url, body });
    expect(decodePart(token, 0)).toEqual({ alg: "HS256", typ: "JWT" });
    const claims = decodePart(token, 1);
    expect(claims).toMatchObject({ iss: "Upstash", sub: url });
    expect(claims.iat).toBeGreaterThanOrEqual(before);
    expect(claims.nbf).toBe(claims.iat);
    expect(claims.exp).toBe((claims.iat as number) + 300);
    expect(claims.jti).toMatch(/^jwt_[A-Za-z0-9_-]+$/);
    // base64url, padded with "=" as in QStash's documented example.
    expect(claims.body).toBe(`${createHash("sha256").update(body).digest("base64url")}=`);
  });

  it("is accepted by @upstash/qstash's Receiver", async () => {
    const token = await signDelivery({ signingKey: currentSigningKey, url, body });
    await expect(receiver.verify({ signature: token, body, url })).resolves.toBe(true);
  });

  it("is accepted by the Receiver under the next key (rotation)", async () => {
    const token = await signDelivery({ signingKey: nextSigningKey, url, body });
    await expect(receiver.verify({ signature: token, body, url })).resolves.toBe(true);
  });

  it("is refused by the Receiver when body, url or key are wrong, or it has expired", async () => {
    const token = await signDelivery({ signingKey: currentSigningKey, url, body });
    await expect(receiver.verify({ signature: token, body: `${body} `, url })).rejects.toThrow();
    await expect(receiver.verify({ signature: token, body, url: `${url}/x` })).rejects.toThrow();
    const foreign = await signDelivery({ signingKey: "sig_other", url, body });
    await expect(receiver.verify({ signature: foreign, body, url })).rejects.toThrow();
    const old = await signDelivery({
      signingKey: currentSigningKey,
      url,
      body,
      now: Date.now() - 600_000,
    });
    await expect(receiver.verify({ signature: old, body, url })).rejects.toThrow();
  });

  it("uses a fresh jti each time", async () => {
    const a = await signDelivery({ signingKey: currentSigningKey, url, body });
    const b = await signDelivery({ signingKey: currentSigningKey, url, body });
    expect(decodePart(a, 1).jti).not.toBe(decodePart(b, 1).jti);
  });
});

describe("verifySignature", () => {
  const keys = { currentSigningKey, nextSigningKey };

  it("accepts a signature made as the QStash SDK makes them", async () => {
    const token = await sdkSignature({ key: currentSigningKey, url, body });
    expect(await verifySignature({ signature: token, body, url, ...keys })).toBe(true);
    // The Receiver agrees, so the test signer is faithful.
    await expect(receiver.verify({ signature: token, body, url })).resolves.toBe(true);
  });

  it("accepts its own signatures, with or without url", async () => {
    const token = await signDelivery({ signingKey: currentSigningKey, url, body });
    expect(await verifySignature({ signature: token, body, url, ...keys })).toBe(true);
    expect(await verifySignature({ signature: token, body, ...keys })).toBe(true);
  });

  it("falls back to the next key and reports which key matched", async () => {
    const token = await sdkSignature({ key: nextSigningKey, url, body });
    const check = await checkSignature({ signature: token, body, url, ...keys });
    expect(check).toMatchObject({ valid: true, key: "next" });
    expect(await verifySignature({ signature: token, body, url, currentSigningKey })).toBe(false);
  });

  it("ignores trailing = on the body hash on both sides", async () => {
    const padded = createHash("sha256").update(body).digest("base64url").concat("=");
    const token = await sdkSignature({
      key: currentSigningKey,
      url,
      body,
      claims: { body: padded },
    });
    expect(await verifySignature({ signature: token, body, url, ...keys })).toBe(true);
  });

  it.each([
    ["a tampered body", { body: `${body}x` }, "body-mismatch"],
    ["a wrong url", { url: "https://evil.example/v1/worker" }, "wrong-url"],
    ["unknown keys", { currentSigningKey: "a", nextSigningKey: "b" }, "bad-signature"],
  ] as const)("refuses %s", async (_label, override, reason) => {
    const token = await sdkSignature({ key: currentSigningKey, url, body });
    const check = await checkSignature({ signature: token, body, url, ...keys, ...override });
    expect(check).toEqual({ valid: false, reason });
  });

  it("refuses an expired signature unless within the clock tolerance", async () => {
    const iat = Math.floor(Date.now() / 1000) - 400;
    const token = await sdkSignature({ key: currentSigningKey, url, body, iat });
    expect(await checkSignature({ signature: token, body, url, ...keys })).toEqual({
      valid: false,
      reason: "expired",
    });
    expect(
      await verifySignature({ signature: token, body, url, ...keys, clockToleranceSec: 200 }),
    ).toBe(true);
  });

  it("refuses a signature that is not yet valid", async () => {
    const iat = Math.floor(Date.now() / 1000) + 120;
    const token = await sdkSignature({ key: currentSigningKey, url, body, iat });
    expect(await checkSignature({ signature: token, body, url, ...keys })).toEqual({
      valid: false,
      reason: "not-yet-valid",
    });
  });

  it("refuses a token claiming a longer life than the queue issues (exp in the year 3000)", async () => {
    const now = Math.floor(Date.now() / 1000);
    const year3000 = Math.floor(Date.UTC(3000, 0, 1) / 1000);
    for (const claims of [
      { exp: year3000 },
      // iat given: the signer's own would be read a second later when a second turns between.
      { iat: now, exp: now + 301 },
      { iat: now + 100_000, nbf: now - 10, exp: now + 100_100 },
      { iat: undefined },
    ]) {
      const token = await sdkSignature({ key: currentSigningKey, url, body, claims });
      expect(
        await checkSignature({ signature: token, body, url, ...keys }),
        JSON.stringify(claims),
      ).toEqual({
        valid: false,
        reason: "too-long-lived",
      });
      expect(deliveryToken(token)).toBeUndefined();
    }
    const fine = await sdkSignature({ key: currentSigningKey, url, body });
    expect(deliveryToken(fine)).toEqual({
      id: decodePart(fine, 1).jti,
      expiresAt: (decodePart(fine, 1).exp as number) * 1000,
    });
    // With a clock tolerance the signature verifies until exp + tolerance: the guard lasts as long.
    expect(deliveryToken(fine, { clockToleranceSec: 600 })?.expiresAt).toBe(
      ((decodePart(fine, 1).exp as number) + 600) * 1000,
    );
    const noJti = await sdkSignature({
      key: currentSigningKey,
      url,
      body,
      claims: { jti: undefined },
    });
    expect(deliveryToken(noJti)).toBeUndefined();
  });

  it("refuses another issuer", async () => {
    const token = await sdkSignature({
      key: currentSigningKey,
      url,
      body,
      claims: { iss: "Someone" },
    });
    expect(await checkSignature({ signature: token, body, url, ...keys })).toEqual({
      valid: false,
      reason: "wrong-issuer",
    });
  });

  it("refuses malformed tokens and other algorithms without throwing", async () => {
    const good = await sdkSignature({ key: currentSigningKey, url, body });
    const [, payload, mac] = good.split(".");
    const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
    const hs512 = await new SignJWT({ ...decodePart(good, 1) })
      .setProtectedHeader({ alg: "HS512", typ: "JWT" })
      .sign(new TextEncoder().encode(currentSigningKey));
    const { exp: _exp, ...withoutExp } = decodePart(good, 1);
    const noExp = await new SignJWT(withoutExp)
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .sign(new TextEncoder().encode(currentSigningKey));
    for (const signature of [
      "",
      "abc",
      "a.b",
      "a.b.c.d",
      "!!.!!.!!",
      `${none}.${payload}.`,
      `${none}.${payload}.${mac}`,
      hs512,
      noExp,
    ]) {
      expect(await checkSignature({ signature, body, url, ...keys })).toEqual({
        valid: false,
        reason: "malformed",
      });
    }
  });
});
