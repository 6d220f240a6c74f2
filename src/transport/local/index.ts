/**
 * @module
 * `tickwork/local`: the in-process transport with QStash's semantics, for development and tests.
 */
export type { FailureCallbackBody } from "../port.ts";
export { LocalDeliveryError, LocalTransportClosedError } from "./errors.ts";
export { LocalTransport, type LocalTransportStats } from "./local-transport.ts";
export { defaultBackoff, type LocalTransportOptions } from "./options.ts";
