/**
 * @module
 * What an API key may do: defined in the domain ({@link "../core/scopes.ts"}), where the engine's
 * actor uses them too; kept here for the configuration's importers.
 */
export { hasScope, SCOPES, type Scope } from "../core/scopes.ts";
