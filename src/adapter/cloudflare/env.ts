/**
 * @module
 * The Worker's variables and secrets, and the check that they are all there: a forgotten
 * `wrangler secret put` fails with the names of what is missing, not with a URL parse error later.
 */
import { TickworkConfigError } from "../../core/errors.ts";

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
  /** QStash token, to publish. */
  QSTASH_TOKEN: string;
  /** QStash API base URL, e.g. a regional endpoint. @default "https://qstash.upstash.io" */
  QSTASH_URL?: string;
  /** QStash's current signing key, to verify deliveries. */
  QSTASH_CURRENT_SIGNING_KEY: string;
  /** QStash's next signing key, accepted too while QStash rotates keys. */
  QSTASH_NEXT_SIGNING_KEY: string;
  /**
   * The Worker's public URL, where QStash delivers (`/v1/worker`, `/v1/dead`); it is what the
   * delivery signatures name. @example "https://tickwork.acme.workers.dev"
   */
  TICKWORK_PUBLIC_URL: string;
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

/** The bindings that must be set (non-empty). */
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

/**
 * Some required bindings are missing or empty; `missing` names them (`variable` the first). A
 * {@link TickworkConfigError}.
 */
export class MissingEnvError extends TickworkConfigError {
  override readonly name = "MissingEnvError";
  readonly missing: readonly string[];

  constructor(missing: readonly string[]) {
    super(
      `tickwork: missing Worker variables ${missing.join(", ")}: ` +
        "set secrets with `wrangler secret put NAME` (`.dev.vars` locally), vars in wrangler.toml",
      { variable: missing[0] },
    );
    this.missing = missing;
  }
}

/**
 * Throws {@link MissingEnvError} unless every binding of {@link REQUIRED_ENV} is a non-empty string
 * (`TICKWORK_API_KEY` may be left out when `TICKWORK_CONFIG` is set: its tenants hold the keys).
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
  const missing = REQUIRED_ENV.filter(
    (name) => !set(name) && !(name === "TICKWORK_API_KEY" && set("TICKWORK_CONFIG")),
  );
  if (missing.length > 0) throw new MissingEnvError(missing);
}
