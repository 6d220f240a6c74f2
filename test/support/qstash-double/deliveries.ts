/**
 * The double's delivery side: messages wait for their not-before time (and flow control), then go
 * to their destination over real HTTP, signed, with `Upstash-Message-Id`, `Upstash-Retried`,
 * `User-Agent: Upstash-QStash` and the original `Content-Type`. Non-2xx is retried with QStash's
 * backoff (or `Upstash-Retry-Delay`, or the destination's `Retry-After`), scaled by `backoffScale`;
 * 489 + `Upstash-NonRetryable-Error: true` stops at once; a message that gives up goes to the DLQ
 * and its failure callback is published as a new message.
 */
import { parseRetryAfter } from "./durations.ts";
import { failureCallbackPayload, type LastResponse } from "./failure-callback.ts";
import type { FlowSpec, MessageSpec } from "./message.ts";
import type {
  DeliveryRecord,
  DlqEntry,
  MessageView,
  QStashDoubleCounters,
  QStashDoubleFaults,
} from "./records.ts";
import { defaultBackoffMs } from "./retry-delay.ts";
import { signQStashJwt } from "./sign.ts";

// setTimeout fires at once for longer waits; longer ones are chained.
const MAX_TIMER_MS = 2_147_483_647;
const RETRY_AFTER_HEADERS = [
  "retry-after",
  "x-ratelimit-reset",
  "x-ratelimit-reset-requests",
  "x-ratelimit-reset-tokens",
];

interface Stored {
  view: MessageView;
  spec: MessageSpec;
  callerIp: string | undefined;
  timer?: ReturnType<typeof setTimeout> | undefined;
}

interface FlowState {
  spec: FlowSpec;
  active: number;
  windowStart: number;
  windowCount: number;
  waiting: Stored[];
  timer?: ReturnType<typeof setTimeout> | undefined;
}

interface AttemptResult {
  ok: boolean;
  last: LastResponse;
}

/** What the delivery side needs from the double. */
export interface DeliveriesConfig {
  signingKey: () => string;
  backoffScale: number;
  /** Multiplies QStash's default backoff only (on top of `backoffScale`). */
  defaultBackoffScale: number;
  /** Timeout of an attempt without `Upstash-Timeout` (the plan's maximum). */
  maxTimeoutMs: number;
  faults: QStashDoubleFaults;
  counters: QStashDoubleCounters;
  random: () => number;
  send: typeof fetch;
}

/** Stored messages and their deliveries. */
export class Deliveries {
  readonly records: DeliveryRecord[] = [];
  readonly dlq: DlqEntry[] = [];
  readonly #config: DeliveriesConfig;
  readonly #messages = new Map<string, Stored>();
  readonly #live = new Set<Stored>();
  readonly #flows = new Map<string, FlowState>();
  readonly #controllers = new Set<AbortController>();
  readonly #twins = new Set<Promise<unknown>>();
  #waiters: Array<() => void> = [];
  #closed = false;
  #dlqSeq = 0;

  constructor(config: DeliveriesConfig) {
    this.#config = config;
  }

  /** Store a published message and schedule its first attempt. */
  add(spec: MessageSpec, messageId: string, callerIp?: string, sourceMessageId?: string): void {
    const now = Date.now();
    const kind = sourceMessageId === undefined ? "message" : "failure-callback";
    const stored: Stored = {
      spec,
      callerIp,
      view: {
        messageId,
        kind,
        url: spec.url,
        notBefore: spec.notBefore,
        createdAt: now,
        retried: 0,
        maxRetries: spec.retries,
        state: "scheduled",
        ...(sourceMessageId !== undefined ? { sourceMessageId } : {}),
        settings: {
          ...(spec.dedupKey !== undefined ? { dedupKey: spec.dedupKey } : {}),
          ...(spec.retryDelayExpression !== undefined
            ? { retryDelay: spec.retryDelayExpression }
            : {}),
          ...(spec.timeoutMs !== undefined ? { timeoutMs: spec.timeoutMs } : {}),
          ...(spec.failureCallback ? { failureCallback: spec.failureCallback.url } : {}),
          ...(spec.flow ? { flow: spec.flow } : {}),
        },
      },
    };
    this.#messages.set(messageId, stored);
    const { reorderMs, holdDeliveries } = this.#config.faults;
    // Held: stored (and listed) but never attempted, so not live either (`idle()` resolves).
    if (holdDeliveries) return;
    this.#live.add(stored);
    const hold = kind === "message" && reorderMs > 0 ? this.#config.random() * reorderMs : 0;
    this.#wakeAt(stored, Math.max(spec.notBefore, now) + hold);
  }

  /** Every stored message. */
  views(): MessageView[] {
    return [...this.#messages.values()].map((m) => ({ ...m.view }));
  }

  /** Messages not yet delivered or given up. */
  get pending(): number {
    return this.#live.size;
  }

  /** Resolves once nothing is waiting or in flight; rejects after `timeoutMs`. */
  idle(timeoutMs: number): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== done);
        const states = [...this.#live].map((m) => `${m.view.messageId}:${m.view.state}`);
        reject(new Error(`QStash double not idle after ${timeoutMs} ms: ${states.join(", ")}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#waiters.push(done);
    });
  }

  /** Drop everything: timers cleared, attempts aborted, idle waiters released. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const m of this.#live) clearTimeout(m.timer);
    for (const f of this.#flows.values()) clearTimeout(f.timer);
    for (const c of this.#controllers) c.abort(new Error("QStash double closed"));
    this.#live.clear();
    await Promise.allSettled(this.#twins);
    this.#notify();
  }

  #wakeAt(m: Stored, at: number): void {
    const wait = Math.max(0, at - Date.now());
    m.timer = setTimeout(
      () => {
        m.timer = undefined;
        if (Date.now() < at) this.#wakeAt(m, at);
        else this.#ready(m);
      },
      Math.min(wait, MAX_TIMER_MS),
    );
  }

  #ready(m: Stored): void {
    if (this.#closed) return;
    const flowSpec = m.spec.flow;
    if (!flowSpec) {
      void this.#run(m);
      return;
    }
    const flow = this.#flow(flowSpec);
    flow.waiting.push(m);
    m.view.state = "waiting";
    this.#pump(flow);
  }

  /** QStash keeps one configuration per key; the latest publish sets it. */
  #flow(spec: FlowSpec): FlowState {
    let flow = this.#flows.get(spec.key);
    if (!flow) {
      flow = { spec, active: 0, windowStart: Date.now(), windowCount: 0, waiting: [] };
      this.#flows.set(spec.key, flow);
    }
    flow.spec = spec;
    return flow;
  }

  #pump(flow: FlowState): void {
    while (flow.waiting.length > 0 && !this.#closed) {
      const { parallelism, rate, periodMs } = flow.spec;
      if (parallelism !== undefined && flow.active >= parallelism) return;
      if (rate !== undefined) {
        const now = Date.now();
        if (now - flow.windowStart >= periodMs) {
          flow.windowStart = now;
          flow.windowCount = 0;
        }
        if (flow.windowCount >= rate) {
          if (!flow.timer) {
            flow.timer = setTimeout(
              () => {
                flow.timer = undefined;
                this.#pump(flow);
              },
              flow.windowStart + periodMs - now,
            );
          }
          return;
        }
        flow.windowCount++;
      }
      const m = flow.waiting.shift()!;
      flow.active++;
      void this.#run(m).finally(() => {
        flow.active--;
        this.#pump(flow);
      });
    }
  }

  async #run(m: Stored): Promise<void> {
    m.view.state = "in-flight";
    if (
      m.view.kind === "message" &&
      m.view.retried === 0 &&
      this.#config.faults.duplicateDeliveries
    ) {
      const twin = this.#attempt(m, true);
      this.#twins.add(twin);
      void twin.finally(() => {
        this.#twins.delete(twin);
        this.#notify();
      });
    }
    const result = await this.#attempt(m, false);
    if (this.#closed) return;
    this.#settle(m, result);
  }

  /** One HTTP attempt. Never rejects. */
  async #attempt(m: Stored, duplicate: boolean): Promise<AttemptResult> {
    const { spec, view } = m;
    const isMessage = view.kind === "message";
    const counters = this.#config.counters;
    if (isMessage) counters.deliveries++;
    else counters.callbacks++;
    const headers = new Headers();
    for (const [name, value] of deliveredHeaders(spec)) headers.append(name, value);
    headers.set("Upstash-Message-Id", view.messageId);
    headers.set("Upstash-Retried", String(view.retried));
    headers.set("User-Agent", "Upstash-QStash");
    if (m.callerIp !== undefined) headers.set("Upstash-Caller-Ip", m.callerIp);
    headers.set(
      "Upstash-Signature",
      signQStashJwt({ signingKey: this.#config.signingKey(), url: spec.url, body: spec.body }),
    );
    const record: DeliveryRecord = {
      messageId: view.messageId,
      kind: view.kind,
      url: spec.url,
      retried: view.retried,
      duplicate,
      at: Date.now(),
      status: 0,
      body: spec.body.toString("utf8"),
      headers: Object.fromEntries(headers),
    };
    this.records.push(record);
    const controller = new AbortController();
    this.#controllers.add(controller);
    const timeoutMs = spec.timeoutMs ?? this.#config.maxTimeoutMs;
    const timer = setTimeout(
      () => controller.abort(new Error(`no response within ${timeoutMs} ms`)),
      timeoutMs,
    );
    try {
      const hasBody = spec.method !== "GET" && spec.method !== "HEAD";
      const response = await this.#config.send(spec.url, {
        method: spec.method,
        headers,
        ...(hasBody ? { body: new Uint8Array(spec.body) } : {}),
        redirect: "manual",
        signal: controller.signal,
      });
      const body = new Uint8Array(await response.arrayBuffer());
      record.status = response.status;
      return {
        ok: response.status >= 200 && response.status < 300,
        last: { status: response.status, headers: response.headers, body },
      };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return {
        ok: false,
        last: { status: 0, headers: new Headers(), body: new TextEncoder().encode(reason) },
      };
    } finally {
      clearTimeout(timer);
      this.#controllers.delete(controller);
    }
  }

  #settle(m: Stored, result: AttemptResult): void {
    const { view, spec } = m;
    const counters = this.#config.counters;
    const isMessage = view.kind === "message";
    if (result.ok) {
      view.state = "delivered";
      if (isMessage) counters.delivered++;
      else counters.callbacksDelivered++;
      this.#finish(m);
      return;
    }
    const { last } = result;
    const nonRetryable =
      last.status === 489 &&
      last.headers.get("upstash-nonretryable-error")?.trim().toLowerCase() === "true";
    if (!nonRetryable && view.retried < spec.retries) {
      const wait = this.#retryWait(m, last);
      view.retried++;
      view.state = "scheduled";
      if (isMessage) counters.retries++;
      this.#wakeAt(m, Date.now() + wait);
      return;
    }
    view.state = "failed";
    if (!isMessage) {
      counters.callbacksFailed++;
      this.#finish(m);
      return;
    }
    counters.failed++;
    const dlqId = `${Date.now()}-${this.#dlqSeq++}`;
    this.dlq.push({
      dlqId,
      messageId: view.messageId,
      url: spec.url,
      responseStatus: last.status,
      retried: view.retried,
    });
    const callback = spec.failureCallback;
    if (callback) {
      const payload = failureCallbackPayload(
        {
          messageId: view.messageId,
          url: spec.url,
          method: spec.method,
          headers: deliveredHeaders(spec),
          body: spec.body,
          retried: view.retried,
          maxRetries: spec.retries,
          notBefore: spec.notBefore,
          createdAt: view.createdAt,
          callerIp: m.callerIp,
        },
        last,
        dlqId,
      );
      // Added before this message leaves #live, so idle() waits for the callback too.
      this.add(
        {
          url: callback.url,
          method: callback.method,
          body: Buffer.from(JSON.stringify(payload), "utf8"),
          contentType: "application/json",
          forward: callback.forward,
          notBefore: Date.now(),
          dedupKey: undefined,
          retries: callback.retries,
          retryDelay: undefined,
          retryDelayExpression: undefined,
          timeoutMs: callback.timeoutMs,
          failureCallback: undefined,
          flow: undefined,
        },
        `msg_${randomId()}`,
        m.callerIp,
        view.messageId,
      );
    }
    this.#finish(m);
  }

  /** `Retry-After` (and kin) first, then `Upstash-Retry-Delay`, then the default backoff; scaled. */
  #retryWait(m: Stored, last: LastResponse): number {
    const now = Date.now();
    for (const name of RETRY_AFTER_HEADERS) {
      const ms = parseRetryAfter(last.headers.get(name), now);
      if (ms !== undefined) return ms * this.#config.backoffScale;
    }
    const retried = m.view.retried;
    const ms = m.spec.retryDelay
      ? m.spec.retryDelay(retried)
      : defaultBackoffMs(retried + 1) * this.#config.defaultBackoffScale;
    return ms * this.#config.backoffScale;
  }

  #finish(m: Stored): void {
    this.#live.delete(m);
    this.#notify();
  }

  #isIdle(): boolean {
    return this.#live.size === 0 && this.#twins.size === 0;
  }

  #notify(): void {
    if (!this.#isIdle() && !this.#closed) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve();
  }
}

/** The headers a message is delivered with, before the per-attempt `Upstash-*` ones. */
function deliveredHeaders(spec: MessageSpec): [string, string][] {
  const headers: [string, string][] = [];
  if (spec.contentType !== undefined) headers.push(["content-type", spec.contentType]);
  for (const [name, value] of spec.forward) headers.push([name, value]);
  return headers;
}

const ID_CHARS = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

const ID_LENGTH = 40;
/** Random bytes drawn 4 KiB at a time: one `getRandomValues` per id cost 12 µs. */
const pool = new Uint8Array(4096);
let used = pool.length;

/** A QStash-looking id body (base58, 40 chars). */
export function randomId(): string {
  if (used + ID_LENGTH > pool.length) {
    crypto.getRandomValues(pool);
    used = 0;
  }
  let id = "";
  for (let i = used; i < used + ID_LENGTH; i++) id += ID_CHARS[pool[i]! % ID_CHARS.length];
  used += ID_LENGTH;
  return id;
}
