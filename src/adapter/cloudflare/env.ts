/**
 * @module
 * The Worker's variables and secrets, and the check that they are all there: a forgotten
 * `wrangler secret put` fails with the names of what is missing, not with a URL parse error later.
 */
import { TickworkConfigError } from "../../core/errors.ts";
import type { QueueProducer } from "../../transport/cloudflare-queues/index.ts";

/**
 * The bindings `functions/cloudflare.ts` reads (`[vars]` in `wrangler.toml`, the rest secrets).
 *
 * @example
 * export default {
 *   fetch: (request: Request, env: TickworkEnv, ctx: ExecutionContext) => …,
 * };
 */
export interface TickworkEnv {
  /** The Upstash Redis REST endpoint. */
  UPSTASH_REDIS_REST_URL: string;
  /** Its token. */
  UPSTASH_REDIS_REST_TOKEN: string;
  /** QStash token, to publish (with QStash: the default when it is set). */
  QSTASH_TOKEN?: string;
  /** QStash API base URL, e.g. a regional endpoint. @default "https://qstash.upstash.io" */
  QSTASH_URL?: string;
  /** QStash's current signing key, to verify deliveries (with QStash). */
  QSTASH_CURRENT_SIGNING_KEY?: string;
  /** QStash's next signing key, accepted too while QStash rotates keys (with QStash). */
  QSTASH_NEXT_SIGNING_KEY?: string;
  /**
   * The Worker's public URL, where QStash delivers (`/v1/worker`, `/v1/dead`); it is what the
   * delivery signatures name. Required with QStash. @example "https://tickwork.acme.workers.dev"
   */
  TICKWORK_PUBLIC_URL?: string;
  /**
   * How jobs travel: `qstash`, or `cloudflare-queues` (the Queue bound as `TICKWORK_QUEUE`, consumed
   * by this Worker's `queue()` handler). @default "qstash" when QSTASH_TOKEN is set, else
   * "cloudflare-queues" when TICKWORK_QUEUE is bound, else "qstash"
   */
  TICKWORK_TRANSPORT?: string;
  /**
   * The Cloudflare Queue jobs travel on: a `[[queues.producers]]` binding named `TICKWORK_QUEUE`
   * whose queue this Worker also consumes (`[[queues.consumers]]`).
   */
  TICKWORK_QUEUE?: QueueProducer;
  /**
   * API keys (comma-separated) accepted as `Authorization: Bearer <key>` on the API routes, each
   * an `admin` key of the tenant `"default"`. Required unless `TICKWORK_CONFIG` has tenant keys.
   */
  TICKWORK_API_KEY?: string;
  /**
   * The configuration as JSON text (tenants with hashed keys, scopes and manifests; CORS;
   * degradation): schema `schema/tickwork.config.schema.json`. A secret or a `[vars]` entry.
   */
  TICKWORK_CONFIG?: string;
  /** Protects `POST /v1/tick`: `Authorization: Bearer <CRON_SECRET>`. The Cron Trigger needs none. */
  CRON_SECRET: string;
  /** Redis key prefix, to share one database between deployments. @default "tw" */
  TICKWORK_PREFIX?: string;
  /**
   * Serve the routes under this path (a Worker on `example.com/api/tickwork/*`); then
   * `TICKWORK_PUBLIC_URL` names it too. @default "/"
   */
  TICKWORK_BASE_PATH?: string;
}

/** The bindings that must be set (non-empty) with QStash. */
export const REQUIRED_ENV = [
  "UPSTASH_REDIS_REST_URL",
  "UPSTASH_REDIS_REST_TOKEN",
  "QSTASH_TOKEN",
  "QSTASH_CURRENT_SIGNING_KEY",
  "QSTASH_NEXT_SIGNING_KEY",
  "TICKWORK_PUBLIC_URL",
  "TICKWORK_API_KEY",
  "CRON_SECRET",
] as const satisfies readonly (keyof TickworkEnv)[];

/** The bindings that must be set with Cloudflare Queues (and the `TICKWORK_QUEUE` binding). */
export const REQUIRED_ENV_QUEUES = [
  "UPSTASH_REDIS_REST_URL",
  "UPSTASH_REDIS_REST_TOKEN",
  "TICKWORK_API_KEY",
  "CRON_SECRET",
] as const satisfies readonly (keyof TickworkEnv)[];

/** How the Worker's jobs travel. */
export type WorkerTransport = "qstash" | "cloudflare-queues";

const TRANSPORTS: readonly WorkerTransport[] = ["qstash", "cloudflare-queues"];

/**
 * The transport the bindings choose: `TICKWORK_TRANSPORT` when set; else QStash when
 * `QSTASH_TOKEN` is set; else Cloudflare Queues when `TICKWORK_QUEUE` is bound; else QStash (whose
 * missing bindings {@link assertEnv} then names).
 * @throws TickworkConfigError naming `TICKWORK_TRANSPORT` for a value it does not know.
 *
 * @example
 * selectWorkerTransport({ TICKWORK_QUEUE: env.TICKWORK_QUEUE }); // "cloudflare-queues"
 */
export function selectWorkerTransport(env: object): WorkerTransport {
  const values = env as Record<string, unknown>;
  const chosen = values.TICKWORK_TRANSPORT;
  if (typeof chosen === "string" && chosen.trim() !== "") {
    const name = chosen.trim() as WorkerTransport;
    if (TRANSPORTS.includes(name)) return name;
    throw new TickworkConfigError(
      `TICKWORK_TRANSPORT must be one of ${TRANSPORTS.join(", ")} on Workers, got ${JSON.stringify(chosen.slice(0, 100))}`,
      { variable: "TICKWORK_TRANSPORT" },
    );
  }
  const token = values.QSTASH_TOKEN;
  if (typeof token === "string" && token.trim() !== "") return "qstash";
  return isQueueProducer(values.TICKWORK_QUEUE) ? "cloudflare-queues" : "qstash";
}

/** Whether `value` looks like a Queue producer binding (it has `sendBatch`). */
export function isQueueProducer(value: unknown): value is QueueProducer {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { sendBatch?: unknown }).sendBatch === "function"
  );
}

/**
 * Some required bindings are missing or empty; `missing` names them (`variable` the first). A
 * {@link TickworkConfigError}.
 */
export class MissingEnvError extends TickworkConfigError {
  override readonly name = "MissingEnvError";
  readonly missing: readonly string[];

  /** @param hint a sentence appended to the message (e.g. the other transport's binding). */
  constructor(missing: readonly string[], hint = "") {
    super(
      `tickwork: missing Worker variables ${missing.join(", ")}: ` +
        "set secrets with `wrangler secret put NAME` (`.dev.vars` locally), vars and queue bindings in wrangler.toml" +
        (hint ? `. ${hint}` : ""),
      { variable: missing[0] },
    );
    this.missing = missing;
  }
}

/**
 * Throws {@link MissingEnvError} unless every binding the chosen transport needs
 * ({@link selectWorkerTransport}) is set: for QStash each of {@link REQUIRED_ENV} a non-empty
 * string, for Cloudflare Queues each of {@link REQUIRED_ENV_QUEUES} and the `TICKWORK_QUEUE`
 * binding (`TICKWORK_API_KEY` may be left out when `TICKWORK_CONFIG` is set: its tenants hold the
 * keys).
 * @throws TickworkConfigError for an unknown `TICKWORK_TRANSPORT`.
 *
 * @example
 * assertEnv(env); // env is a TickworkEnv from here on
 */
export function assertEnv(env: object): asserts env is TickworkEnv {
  const values = env as Record<string, unknown>;
  const set = (name: string) => {
    const value = values[name];
    return typeof value === "string" && value.trim() !== "";
  };
  const queues = selectWorkerTransport(env) === "cloudflare-queues";
  const required: readonly string[] = queues ? REQUIRED_ENV_QUEUES : REQUIRED_ENV;
  const missing = required.filter(
    (name) => !set(name) && !(name === "TICKWORK_API_KEY" && set("TICKWORK_CONFIG")),
  );
  if (queues && !isQueueProducer(values.TICKWORK_QUEUE)) missing.push("TICKWORK_QUEUE");
  // Neither transport configured (QStash is then the default): name the other way out too.
  const neither = !queues && missing.includes("QSTASH_TOKEN") && !set("TICKWORK_TRANSPORT");
  // A queue name where the binding belongs (a [vars] entry): not a binding, so not "missing" only.
  const asText = values.TICKWORK_QUEUE !== undefined && !isQueueProducer(values.TICKWORK_QUEUE);
  if (missing.length > 0) {
    throw new MissingEnvError(
      missing,
      asText
        ? "TICKWORK_QUEUE is set but is no Queue binding: bind the queue under [[queues.producers]] " +
            '(binding = "TICKWORK_QUEUE") in wrangler.toml, not under [vars]'
        : neither
          ? "Or bind TICKWORK_QUEUE (a Queue producer) to use Cloudflare Queues instead of QStash"
          : "",
    );
  }
}
