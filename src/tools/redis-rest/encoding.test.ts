import { describe, expect, it } from "vitest";
import { encodeReply, wantsBase64 } from "./encoding.ts";

/** What `@upstash/redis` does with a base64 string: atob, then UTF-8. */
const decode = (b64: string) =>
  new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));

const encodeBase64 = (reply: Parameters<typeof encodeReply>[0]) => encodeReply(reply, true);

describe("encodeReply", () => {
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

  it("encodes bytes as they are with base64, and reads them as UTF-8 without", () => {
    const bytes = new Uint8Array([0xff, 0x41, 0xc3, 0xbc]);
    expect(encodeReply([bytes, Buffer.from("OK")], true)).toEqual(["/0HDvA==", "T0s="]);
    // A view into a larger buffer: only its own bytes.
    const view = new TextEncoder().encode("xxOKxx").subarray(2, 4);
    expect(encodeReply(view, true)).toBe("T0s=");
    expect(encodeReply([bytes, 5], false)).toEqual(["\ufffdAü", 5]);
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
