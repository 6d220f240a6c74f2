/**
 * BatchWire writes the `/v2/batch` body `Client.batch` would send, byte for byte; the transport
 * sends exactly what `Client.batch` sends, through the fast path or (for values the writer does
 * not cover) through `Client.batch` itself.
 */
import { Client, type PublishBatchRequest } from "@upstash/qstash";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { JobSpec, OutboxMessage } from "../../core/model.ts";
import { BatchWire } from "./batch-wire.ts";
import { type QStashTransportOptions, resolveQStashOptions } from "./options.ts";
import { toPublishRequest } from "./publish-request.ts";
import { QStashTransport } from "./qstash-transport.ts";

interface Sent {
  url: string;
  method: string | undefined;
  headers: [string, string][];
  body: string;
}

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
});

/** Replace `fetch` with one that records each request and accepts every entry of a batch. */
function captureFetch(): Sent[] {
  const sent: Sent[] = [];
  globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const body = String(init?.body);
    sent.push({
      url: String(input),
      method: init?.method,
      headers: [...new Headers(init?.headers)],
      body,
    });
    const entries = JSON.parse(body) as unknown[];
    const answer = entries.map((_, i) => ({ messageId: `msg_${sent.length}_${i}` }));
    return new Response(JSON.stringify(answer), {
      status: 200,
      headers: { "content-type": "application/json" },
    });
  }) as typeof fetch;
  return sent;
}

const base = {
  token: "tok_batch_wire",
  baseUrl: "http://127.0.0.1:1",
  workerUrl: "https://app.example/v1/worker",
  failureCallbackUrl: "https://app.example/v1/dead",
  currentSigningKey: "sig_a",
  nextSigningKey: "sig_b",
  retry: false,
} satisfies QStashTransportOptions;

const NOW = 1_700_000_000_000;

function message(
  i: number,
  over: Partial<JobSpec> & { dedupId?: string; notBefore?: number } = {},
) {
  const { dedupId, notBefore, ...job } = over;
  const id = `sched-${i}@${NOW + i * 1000}`;
  const spec: JobSpec = {
    id,
    tenant: "default",
    handler: "echo",
    input: { n: i, note: 'héllo 🚀 "quoted" \n' },
    priority: 5,
    timeoutMs: 30_000 + i,
    retries: i % 4,
    tags: ["a"],
    runAt: NOW + i,
    createdAt: NOW,
    ...job,
  };
  const msg: OutboxMessage = {
    id,
    dedupId: dedupId ?? id,
    job: spec,
    notBefore: notBefore ?? NOW + (i % 3 === 0 ? -5_000 : 1_250 + i),
    recoverAt: NOW + 30_000,
  };
  return msg;
}

/** The body `Client.batch` sends for `requests` (with a client configured by `config`). */
async function sdkBody(
  requests: PublishBatchRequest[],
  config: ConstructorParameters<typeof Client>[0] = {},
): Promise<string> {
  const sent = captureFetch();
  const client = new Client({
    token: base.token,
    baseUrl: base.baseUrl,
    devMode: false,
    retry: false,
    ...config,
  });
  await client.batch(requests);
  globalThis.fetch = realFetch;
  expect(sent).toHaveLength(1);
  return sent[0]!.body;
}

const variants: Array<[string, Partial<QStashTransportOptions>]> = [
  ["defaults", {}],
  ["no failure callback", { failureCallbackUrl: undefined }],
  ["retry delay", { retryDelay: "pow(2, retried) * 1000" }],
  [
    "flow control",
    {
      flowControl: {
        echo: { parallelism: 5 },
        mail: { key: "provider", rate: 100, period: "1m" },
        both: { parallelism: 2, rate: 7 },
        numeric: { rate: 3, period: 30 as unknown as "30s" },
      },
    },
  ],
];

describe("BatchWire", () => {
  it.each(variants)("writes the SDK's batch body: %s", async (_name, options) => {
    const resolved = resolveQStashOptions({ ...base, ...options });
    const handlers = ["echo", "mail", "both", "numeric", "other"];
    const requests = Array.from({ length: 25 }, (_, i) =>
      toPublishRequest(message(i, { handler: handlers[i % handlers.length]! }), resolved, NOW),
    );
    const client = new Client({ token: base.token, baseUrl: base.baseUrl, devMode: false });
    const wire = new BatchWire(client.http);
    const entries = requests.map((r) => wire.entry(r));
    expect(entries.every((e) => e !== undefined)).toBe(true);
    expect(JSON.stringify(entries)).toBe(await sdkBody(requests));
  });

  it("merges the client's global and telemetry headers as the SDK does", async () => {
    const resolved = resolveQStashOptions(base);
    const requests = [0, 1, 2].map((i) => toPublishRequest(message(i), resolved, NOW));
    const configs: NonNullable<ConstructorParameters<typeof Client>[0]>[] = [
      { enableTelemetry: false },
      { headers: { "X-Team": "core", "Upstash-Label": "nightly" } },
      { headers: { "Upstash-Telemetry-Sdk": "mine" } },
    ];
    for (const config of configs) {
      const client = new Client({ token: base.token, baseUrl: base.baseUrl, ...config });
      const wire = new BatchWire(client.http);
      const entries = requests.map((r) => wire.entry(r));
      expect(entries.every((e) => e !== undefined)).toBe(true);
      expect(JSON.stringify(entries)).toBe(await sdkBody(requests, config));
    }
  });

  it("declines what Headers would normalise, reject or re-encode, and fields it does not know", () => {
    const resolved = resolveQStashOptions(base);
    const wire = new BatchWire(new Client({ token: "t", devMode: false }).http);
    const request = (over: Partial<OutboxMessage>) =>
      toPublishRequest({ ...message(1), ...over }, resolved, NOW);
    for (const dedupId of [" lead", "trail ", "tab\tinside", "new\nline", "é", "🚀", "\u007f"]) {
      expect(wire.entry(request({ dedupId }))).toBeUndefined();
    }
    expect(wire.entry(request({ dedupId: "plain id: with spaces & symbols~r1" }))).toBeDefined();
    expect(wire.entry({ ...request({}), delay: 5 })).toBeUndefined();
    expect(wire.entry({ ...request({}), headers: { "X-Other": "1" } })).toBeUndefined();
    expect(wire.entry({ ...request({}), flowControl: { key: "k" } as never })).toBeUndefined();
    expect(
      wire.entry({ ...request({}), flowControl: { key: "", parallelism: 1 } as never }),
    ).toEqual(wire.entry(request({})));
  });
});

describe("QStashTransport sends what Client.batch sends", () => {
  it("for plain messages (fast path) and for odd ones (through Client.batch)", async () => {
    const options: QStashTransportOptions = {
      ...base,
      retryDelay: "1000",
      flowControl: { slow: { parallelism: 1 } },
    };
    const resolved = resolveQStashOptions(options);
    const plain = Array.from({ length: 7 }, (_, i) => message(i, i % 2 ? { handler: "slow" } : {}));
    const odd = [...plain.slice(0, 3), message(9, { dedupId: "sched-é@1" }), ...plain.slice(3)];
    for (const [messages, sdkCalls] of [
      [plain, 0],
      [odd, 1],
    ] as const) {
      const batch = vi.spyOn(Client.prototype, "batch");
      const sent = captureFetch();
      const transport = new QStashTransport({ ...options, now: () => NOW });
      const outcomes = await transport.publish(messages);
      globalThis.fetch = realFetch;
      expect(batch).toHaveBeenCalledTimes(sdkCalls);
      batch.mockRestore();
      expect(outcomes.every((o, i) => o.ok && o.id === messages[i]!.id)).toBe(true);
      const want = await sdkBody(messages.map((m) => toPublishRequest(m, resolved, NOW)));
      expect(sent).toHaveLength(1);
      expect(sent[0]!.body).toBe(want);
      expect(sent[0]!.url).toBe(`${base.baseUrl}/v2/batch`);
      expect(sent[0]!.method).toBe("POST");
      expect(sent[0]!.headers).toEqual([
        ["authorization", `Bearer ${base.token}`],
        ["content-type", "application/json"],
      ]);
    }
  });
});
