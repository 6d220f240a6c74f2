/**
 * @module
 * The submit route (`POST /v1/jobs`) answered without Hono: for a server that can read a request
 * without building a web `Request` and write the answer without a `Response` — `serve` in
 * `tickwork/node` (src/adapter/node/serve.ts). There, turning a request into a `Request` and the
 * answer back costs about as much CPU as the submit itself (docs/adr/0046-direct-submit.md).
 *
 * {@link createApp} attaches a {@link DirectSubmit} to the apps where it answers exactly as the
 * Hono route would: submits served (roles), no CORS, and a built-in `authorize` (API keys,
 * tenants, or none), which reads nothing but headers. The steps after authorization are the
 * route's own (`./routes/submit.ts`); errors are rendered as the app's error handler renders them.
 */
import { type Logger, mayLog } from "../engine/logger.ts";
import { type HeaderExchange, headerOnly } from "./middleware/auth.ts";
import { logRequest, requestIdOf } from "./middleware/request-id.ts";
import type { AppConfig } from "./options.ts";
import { failure, PROBLEM_JSON } from "./problem.ts";
import { submitJob } from "./routes/submit.ts";

/** A request as a server read it: its headers, and a reader of its body. */
export interface DirectRequest {
  /** A header by its lower-case name; several of one name joined with `", "` (as `Headers`). */
  header(name: string): string | undefined;
  /** The body: its bytes, or a 413 `TickworkError` as soon as it is longer than `maxBytes`. */
  body(maxBytes: number): Promise<Uint8Array>;
}

/** An answer to write: status, headers (`content-type` and `x-request-id` included) and body. */
export interface DirectAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** The submit route of one app, for a server to answer directly. */
export interface DirectSubmit {
  /** The path it answers `POST` on (`<basePath>/v1/jobs`), compared without the query string. */
  readonly path: string;
  /** The answer to one `POST` of {@link path}; never rejects (errors become problem+json). */
  answer(request: DirectRequest): Promise<DirectAnswer>;
}

const DIRECT = Symbol.for("tickwork.directSubmit");

/**
 * The app's {@link DirectSubmit}, if it has one: a server may answer `POST` of its `path` with it
 * instead of the app's `fetch`.
 */
export function directSubmitOf(app: object): DirectSubmit | undefined {
  return (app as { [DIRECT]?: DirectSubmit })[DIRECT];
}

/** Give `app` the direct submit route of `config`, when it answers as the app would. */
export function attachDirectSubmit(app: object, config: AppConfig): void {
  const authorize = headerOnly(config.authorize);
  if (!config.serves.read || !config.serves.write || config.cors || !authorize) return;
  const direct = directSubmit(config, authorize);
  Object.defineProperty(app, DIRECT, { value: direct, enumerable: false });
}

function directSubmit(
  config: AppConfig,
  authorize: NonNullable<ReturnType<typeof headerOnly>>,
): DirectSubmit {
  const { logger } = config.engine.options;
  const path = `${config.pathPrefix}/v1/jobs`;
  return {
    path,
    async answer(request) {
      const started = Date.now();
      const requestId = requestIdOf(request.header("x-request-id"));
      // Headers the steps set for an error's answer: a challenge, `RateLimit-*`.
      const set: Record<string, string> = {};
      const header = (name: string, value: string) => {
        set[name] = value;
      };
      let answer: DirectAnswer;
      try {
        const exchange: HeaderExchange = { req: { header: request.header }, header };
        const pending = authorize(exchange);
        const actor = pending instanceof Promise ? await pending : pending;
        const { status, text, headers } = await submitJob(config, {
          actor,
          appPath: config.pathPrefix,
          requestHeader: request.header,
          body: request.body,
          header,
        });
        headers["content-type"] = "application/json";
        headers["x-request-id"] = requestId;
        answer = { status, text, headers };
      } catch (error) {
        answer = problemAnswer(logger, error, requestId, path, set);
      }
      // The request-id middleware's last line, its child logger made only when it writes.
      if (mayLog(logger, "debug")) {
        logRequest(logger.child({ requestId }), "POST", path, answer.status, started);
      }
      return answer;
    },
  };
}

/** The problem+json answer for `error`, as the app's error handler renders and logs it. */
function problemAnswer(
  logger: Logger,
  error: unknown,
  requestId: string,
  path: string,
  set: Record<string, string>,
): DirectAnswer {
  const { body, headers } = failure(logger, error, requestId, "POST", path);
  return {
    status: body.status,
    headers: { ...set, ...headers, "content-type": PROBLEM_JSON, "x-request-id": requestId },
    text: JSON.stringify(body),
  };
}
