import { describe, expect, test } from "vitest";
import {
  apiError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  TickworkApiError,
  UnauthorizedError,
  UnavailableError,
  ValidationError,
} from "./errors.ts";

function answer(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): [Response, unknown] {
  return [new Response(null, { status, headers }), body];
}

const problem = (status: number, code: string) => ({
  type: `urn:tickwork:problem:${code}`,
  title: "T",
  status,
  detail: "d",
});

describe("apiError", () => {
  test.each([
    [400, ValidationError],
    [422, ValidationError],
    [401, UnauthorizedError],
    [403, ForbiddenError],
    [404, NotFoundError],
    [409, ConflictError],
    [429, RateLimitedError],
    [503, UnavailableError],
  ])("%i → %o", (status, type) => {
    const error = apiError(...answer(status, problem(status, "x")));
    expect(error).toBeInstanceOf(type);
    expect(error).toBeInstanceOf(TickworkApiError);
    expect(error).toMatchObject({ status, code: "x", problem: { detail: "d" } });
  });

  test("other statuses are the base class", () => {
    const error = apiError(...answer(500, problem(500, "internal")));
    expect(error.constructor).toBe(TickworkApiError);
    expect(error.message).toBe("500 T: d");
  });

  test("Retry-After in seconds or as an HTTP date", () => {
    const seconds = apiError(...answer(429, problem(429, "quota"), { "retry-after": "7" }));
    expect((seconds as RateLimitedError).retryAfter).toBe(7);
    const date = new Date(Date.now() + 30_000).toUTCString();
    const dated = apiError(...answer(503, problem(503, "down"), { "retry-after": date }));
    expect((dated as UnavailableError).retryAfter).toBeGreaterThanOrEqual(28);
    expect((dated as UnavailableError).retryAfter).toBeLessThanOrEqual(30);
    expect((apiError(...answer(503, {})) as UnavailableError).retryAfter).toBeUndefined();
    // Neither whole seconds nor a date: unknown, not "at once" (Date.parse reads "1.5" as a date).
    for (const value of ["1.5", "-1", "2.0", "1e3", " ", "soon"]) {
      const odd = apiError(...answer(503, problem(503, "down"), { "retry-after": value }));
      expect((odd as UnavailableError).retryAfter, value).toBeUndefined();
    }
  });

  test("a body that is not a problem document still gives a usable error", () => {
    const error = apiError(...answer(502, "<html>bad gateway</html>", { "x-request-id": "r1" }));
    expect(error).toMatchObject({
      status: 502,
      code: "http_502",
      requestId: "r1",
      problem: {
        type: "urn:tickwork:problem:http_502",
        status: 502,
        detail: "<html>bad gateway</html>",
      },
    });
    expect(error.errors).toEqual([]);
  });

  test("code: a URN's last segment, a URL's last path segment, http_<status> for about:blank", () => {
    const code = (type: string, status = 402) => apiError(...answer(status, { type })).code;
    expect(code("urn:tickwork:problem:unknown_handler")).toBe("unknown_handler");
    expect(code("about:blank")).toBe("http_402");
    expect(code("https://example.com/probs/out-of-credit")).toBe("out-of-credit");
    expect(code("https://example.com/probs/out%20of%20credit/")).toBe("out of credit");
    expect(code("https://example.com/")).toBe("http_402");
    expect(code("https://example.com/probs/%E0%A4%A")).toBe("%E0%A4%A");
    expect(code("")).toBe("http_402");
  });

  test("field issues are exposed as errors", () => {
    const body = {
      ...problem(400, "invalid_request"),
      errors: [{ path: "priority", message: "too big" }],
    };
    expect(apiError(...answer(400, body)).errors).toEqual([
      { path: "priority", message: "too big" },
    ]);
  });
});
