/**
 * @module
 * Job dependencies (ADR 0014): what both stores answer when a submit names jobs it cannot wait
 * for, and the bound on the work one release does.
 */
import { UnprocessableError } from "../../core/errors.ts";

/**
 * Most dependents one store operation releases or cancels (a cascade included). On Redis the
 * rest is remembered and continued by the next release; the memory store has no such bound.
 */
export const DEPS_RELEASE_BUDGET = 1_000;

/**
 * The 422 of a submit whose `after` names jobs that do not exist (or expired, or belong to
 * another tenant): `unknown_dependencies`, naming them. Thrown by `submitJob`, nothing written.
 */
export function unknownDependencies(ids: readonly string[]): UnprocessableError {
  return new UnprocessableError(
    "unknown_dependencies",
    `after names unknown jobs: ${ids.join(", ")}`,
    { errors: ids.map((id) => ({ path: "after", message: `unknown job: ${id}` })) },
  );
}
