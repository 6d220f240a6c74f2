import { describe, expect, it } from "vitest";
import { encodeBase64, wantsBase64 } from "./encoding.ts";

/** What `@upstash/redis` does with a base64 string: atob, then UTF-8. */
const decode = (b64: string) =>
  new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));

describe("encodeBase64", () => {
  it("encodes every string at every depth, OK included; numbers and nil pass through", () => {
    expect(encodeBase64(["OK", ["OK", 1, null, ["ü"]], 7, ""])).toEqual([
      "T0s=",
      ["T0s=", 1, null, ["w7w="]],
      7,
      "",
    ]);
    expect(encodeBase64("OK")).toBe("T0s=");
    expect(encodeBase64(null)).toBeNull();
  });

  it("round-trips UTF-8 text through the client's decoding", () => {
    for (const text of ["héllo wörld ✓ 🎉", "T0s=", "line\nbreak", '{"a":1}']) {
      expect(decode(encodeBase64(text) as string)).toBe(text);
    }
  });
});

describe("wantsBase64", () => {
  it("reads Upstash-Encoding: base64, case-insensitively, among several values", () => {
    expect(wantsBase64("base64")).toBe(true);
    expect(wantsBase64("gzip, BASE64")).toBe(true);
    expect(wantsBase64(undefined)).toBe(false);
    expect(wantsBase64("")).toBe(false);
  });
});
