import { describe, expect, it } from "vitest";
import { createClient } from "./client.ts";

describe("createClient's url", () => {
  it("refuses a query, a fragment or credentials, which no request would carry", () => {
    for (const url of [
      "https://app.example.com/api?x-vercel-protection-bypass=secret",
      "https://app.example.com/api#part",
      "https://user:pass@app.example.com/api",
      "https://user@app.example.com",
    ]) {
      expect(() => createClient({ url }), url).toThrow(/origin and a path only/);
    }
    expect(() => createClient({ url: "ftp://app.example.com" })).toThrow(/http\(s\)/);
  });

  it("sends each request under the base's origin and path", async () => {
    const seen: string[] = [];
    const client = createClient({
      url: new URL("https://app.example.com/api/tickwork/"),
      fetch: async (input) => {
        seen.push(String(input));
        return new Response(JSON.stringify({ id: "j_1", status: "queued" }), {
          status: 200,
          headers: { "content-type": "application/json" },
        });
      },
    });
    await client.jobs.get("j_1");
    expect(seen).toEqual(["https://app.example.com/api/tickwork/v1/jobs/j_1"]);
  });
});
