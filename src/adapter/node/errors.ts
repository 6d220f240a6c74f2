/**
 * @module
 * The two ways a Node server refuses to start, each printed as a plain message (no stack trace).
 */

/** A configuration the server cannot start with (missing key, unreachable Redis, port in use). */
export class StartError extends Error {
  override name = "StartError";
}

/** A configuration the environment cannot give: the message says what to set. */
export class ConfigError extends Error {
  override name = "ConfigError";
}
