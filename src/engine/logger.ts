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
  const min = ORDER[opts.level ?? "info"];
  const base = opts.base ?? {};
  const sink = opts.sink ?? toConsole;
  const write = (level: Level, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return;
    sink(JSON.stringify({ level, time: new Date().toISOString(), msg, ...base, ...fields }), level);
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    child: (fields) => jsonLogger({ ...opts, base: { ...base, ...fields } }),
  };
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
