import { describe, expect, it } from "vitest";
import {
  formatTraceparent,
  MAX_TRACESTATE_CHARS,
  traceContextOf,
  traceOfUnknown,
  traceparentParts,
  validTraceparent,
  validTracestate,
} from "./trace.ts";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN_ID = "00f067aa0ba902b7";
const VALID = `00-${TRACE_ID}-${SPAN_ID}-01`;

describe("validTraceparent", () => {
  it("keeps a version-00 value as it is", () => {
    expect(validTraceparent(VALID)).toBe(VALID);
    expect(validTraceparent(`00-${TRACE_ID}-${SPAN_ID}-00`)).toBe(`00-${TRACE_ID}-${SPAN_ID}-00`);
  });

  it.each([
    ["empty", ""],
    ["short", VALID.slice(0, 54)],
    ["longer version 00", `${VALID}-extra`],
    ["uppercase", VALID.toUpperCase()],
    ["zero trace id", `00-${"0".repeat(32)}-${SPAN_ID}-01`],
    ["zero span id", `00-${TRACE_ID}-${"0".repeat(16)}-01`],
    ["version ff", `ff-${TRACE_ID}-${SPAN_ID}-01`],
    ["bad separator", `00_${TRACE_ID}-${SPAN_ID}-01`],
    ["non-hex", `00-${TRACE_ID.replace("4", "g")}-${SPAN_ID}-01`],
    ["leading space", ` ${VALID}`],
    ["later version glued", `01-${TRACE_ID}-${SPAN_ID}-01x`],
    ["huge", `01-${TRACE_ID}-${SPAN_ID}-01-${"a".repeat(10_000)}`],
  ])("refuses %s", (_, value) => {
    expect(validTraceparent(value)).toBeUndefined();
  });

  it("reads a later version's version-00 fields, keeping only the sampled flag", () => {
    expect(validTraceparent(`cc-${TRACE_ID}-${SPAN_ID}-09`)).toBe(`00-${TRACE_ID}-${SPAN_ID}-01`);
    expect(validTraceparent(`01-${TRACE_ID}-${SPAN_ID}-02-more`)).toBe(
      `00-${TRACE_ID}-${SPAN_ID}-00`,
    );
  });
});

describe("validTracestate", () => {
  it("keeps W3C lists, with spaces around members and empty members", () => {
    expect(validTracestate("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")).toBe(
      "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
    );
    expect(validTracestate(" a=1 ,\tb=2,,t@sys=x y")).toBe("a=1 ,\tb=2,,t@sys=x y");
  });

  it.each([
    ["empty", ""],
    ["only commas", ", ,"],
    ["uppercase key", "Congo=1"],
    ["no value", "a="],
    ["no equals", "a"],
    ["comma in nothing", "a=b=c"],
    ["duplicate key", "a=1,a=2"],
    ["33 members", Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(",")],
    ["over 512 characters", `a=${"x".repeat(MAX_TRACESTATE_CHARS)}`],
    ["10 kB", "k=v,".repeat(2_500)],
    ["non-ASCII value", "a=é"],
    ["value over 256", `a=${"x".repeat(257)}`],
  ])("refuses %s", (_, value) => {
    expect(validTracestate(value)).toBeUndefined();
  });
});

describe("traceContextOf and traceOfUnknown", () => {
  it("needs a valid traceparent; drops an invalid tracestate alone", () => {
    expect(traceContextOf(VALID, "a=1")).toEqual({ traceparent: VALID, tracestate: "a=1" });
    expect(traceContextOf(VALID, "A=1")).toEqual({ traceparent: VALID });
    expect(traceContextOf(null, "a=1")).toBeUndefined();
    expect(traceContextOf("nope", "a=1")).toBeUndefined();
  });

  it("checks a delivered trace field again", () => {
    expect(traceOfUnknown({ traceparent: VALID, tracestate: 7 })).toEqual({ traceparent: VALID });
    expect(traceOfUnknown({ traceparent: VALID.toUpperCase() })).toBeUndefined();
    expect(traceOfUnknown("x")).toBeUndefined();
    expect(traceOfUnknown(null)).toBeUndefined();
  });

  it("parts and format round-trip", () => {
    const parts = traceparentParts(VALID);
    expect(parts).toEqual({ traceId: TRACE_ID, spanId: SPAN_ID, flags: 1 });
    expect(formatTraceparent(parts.traceId, parts.spanId, parts.flags)).toBe(VALID);
  });
});
