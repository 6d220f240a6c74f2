/**
 * @module
 * The one error of schedule parsing: a named class with a stable `code` the HTTP layer can render.
 */

/** Why a schedule spec or time zone was rejected. */
export type ScheduleErrorCode =
  /** Not a cron expression: empty, garbage, wrong field count, value out of range, unknown macro. */
  | "invalid_cron"
  /** A cron expression that is well-formed but matches no date at all (e.g. `0 0 30 2 *`). */
  | "never_fires"
  /** Not an IANA time zone name. */
  | "invalid_timezone"
  /** Looks like an interval but is not a whole number followed by `s`, `m`, `h` or `d`. */
  | "invalid_interval"
  /** An interval shorter than 1 s or longer than 365 d. */
  | "interval_out_of_range";

/**
 * A schedule spec or time zone that cannot be used. `message` says what is wrong in words a user can
 * act on; `code` is stable for programs.
 *
 * @example
 * try {
 *   parseSchedule("61 * * * *", "UTC");
 * } catch (error) {
 *   if (error instanceof ScheduleError) console.log(error.code); // "invalid_cron"
 * }
 */
export class ScheduleError extends Error {
  override name = "ScheduleError";
  readonly code: ScheduleErrorCode;

  constructor(code: ScheduleErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
