/**
 * @module
 * A minimal structured logger: JSON lines by default, replaceable by any object with these methods.
 */

/** Log sink. Fields are merged into the JSON line. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

/** Severity of a log line. */
export type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Options of {@link jsonLogger}. */
export interface JsonLoggerOptions {
  /** Lines below this level are dropped. @default "info" */
  level?: Level;
  /** Fields of every line (a child adds its own). */
  base?: Record<string, unknown>;
  /**
   * Where a line goes.
   * @default warn and error to `console.error`, the rest to `console.log`
   */
  sink?: (line: string, level: Level) => void;
}

/**
 * A logger writing one JSON object per line: `level`, `time`, `msg`, then the fields. The HTTP
 * app gives each request a child carrying its `requestId`.
 *
 * @example
 * const logger = jsonLogger({ level: "info" }).child({ requestId });
 * logger.info("leader changed", { holder: "tw-a1b2c3d4" });
 * // {"level":"info","time":"2026-…","msg":"leader changed","requestId":"…","holder":"tw-a1b2c3d4"}
 */
export function jsonLogger(opts: JsonLoggerOptions = {}): Logger {
  return new JsonLogger(ORDER[opts.level ?? "info"], opts.base ?? {}, opts.sink ?? toConsole);
}

/**
 * {@link jsonLogger}'s loggers. A class, so that a child (one per request and per delivery) is
 * one small object rather than a set of fresh closures.
 */
class JsonLogger implements Logger {
  constructor(
    private readonly min: number,
    private readonly base: Record<string, unknown>,
    private readonly sink: (line: string, level: Level) => void,
  ) {}

  debug(msg: string, fields?: Record<string, unknown>): void {
    this.write("debug", msg, fields);
  }

  info(msg: string, fields?: Record<string, unknown>): void {
    this.write("info", msg, fields);
  }

  warn(msg: string, fields?: Record<string, unknown>): void {
    this.write("warn", msg, fields);
  }

  error(msg: string, fields?: Record<string, unknown>): void {
    this.write("error", msg, fields);
  }

  child(fields: Record<string, unknown>): Logger {
    // Not `{ ...base, ...fields }`: a literal that starts with a spread is slow to extend on
    // Node 20 (docs/adr/0027-objects-on-hot-paths.md); a child is made per request.
    return new JsonLogger(this.min, Object.assign({}, this.base, fields), this.sink);
  }

  /** Whether lines of `level` are written. */
  enabled(level: Level): boolean {
    return ORDER[level] >= this.min;
  }

  private write(level: Level, msg: string, fields?: Record<string, unknown>): void {
    if (ORDER[level] < this.min) return;
    const time = new Date().toISOString();
    const line: Record<string, unknown> = { level, time, msg, ...this.base, ...fields };
    // A call's fields add to the line; they never replace its level, time, msg or the fields its
    // logger carries (a request's requestId, a job's jobId): a handler's `{ level: 5 }` is data.
    if (fields !== undefined) {
      line.level = level;
      line.time = time;
      line.msg = msg;
      Object.assign(line, this.base);
    }
    this.sink(JSON.stringify(line), level);
  }
}

function toConsole(line: string, level: Level): void {
  if (level === "error" || level === "warn") console.error(line);
  else console.log(line);
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
};

/**
 * Whether `logger` may write lines of `level`: `false` only when that is known — a
 * {@link jsonLogger} (or a child of one) below its level, or {@link silentLogger} — so that a
 * caller can skip building fields no one reads.
 *
 * @example
 * if (mayLog(log, "debug")) log.debug("request", { path: c.req.path });
 */
export function mayLog(logger: Logger, level: Level): boolean {
  if (logger === silentLogger) return false;
  return logger instanceof JsonLogger ? logger.enabled(level) : true;
}
