/**
 * @module
 * The two ways a Node server refuses to start, each printed as a plain message (no stack trace).
 * Both are a {@link TickworkConfigError} (the one configuration error of every platform), under
 * the names the Node entry has always thrown. The CLI exits 1 for a start that failed on what it
 * met (`StartError` with `atRuntime`: Redis, the port, a missing package) and 2 for a
 * configuration refused (any other).
 */
import { TickworkConfigError } from "../../core/errors.ts";

/**
 * A configuration the server cannot start with (missing key, unreachable Redis, port in use):
 * what `startServer` throws for any setup it refuses.
 */
export class StartError extends TickworkConfigError {
  override name = "StartError";
  /**
   * True when the start failed on what it met (Redis unreachable or refusing, the port taken, a
   * step timed out, a package not installed), false when its configuration was refused.
   */
  readonly atRuntime: boolean;

  constructor(
    message: string,
    options?: ConstructorParameters<typeof TickworkConfigError>[1] & { atRuntime?: boolean },
  ) {
    super(message, options);
    this.atRuntime = options?.atRuntime ?? false;
  }

  /** `error` as a `StartError`, keeping its message, `variable` and `field`. */
  static from(error: TickworkConfigError): StartError {
    if (error instanceof StartError) return error;
    return new StartError(error.message, {
      variable: error.variable,
      field: error.field,
      cause: error,
    });
  }
}

/** A configuration the environment cannot give: the message says what to set. */
export class ConfigError extends TickworkConfigError {
  override name = "ConfigError";
}
