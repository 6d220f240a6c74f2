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

type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * A logger writing one JSON object per line to the console.
 *
 * @example
 * const logger = jsonLogger({ level: "info" }).child({ requestId });
 */
export function jsonLogger(opts: { level?: Level; base?: Record<string, unknown> } = {}): Logger {
  const min = ORDER[opts.level ?? "info"];
  const base = opts.base ?? {};
  const write = (level: Level, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return;
    const line = JSON.stringify({ level, time: new Date().toISOString(), msg, ...base, ...fields });
    if (level === "error" || level === "warn") console.error(line);
    else console.log(line);
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    child: (fields) => jsonLogger({ ...opts, base: { ...base, ...fields } }),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
};
