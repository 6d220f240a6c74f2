/**
 * @module
 * Handler patterns of a tenant's manifest (`tickwork/config` exports {@link compileGlobs}). Handler names are dot-separated (`email.send`,
 * `reports.daily.pdf`); in a pattern `*` matches any characters but `.` (one segment or part of
 * one), `**` matches any characters (dots included), everything else matches itself.
 *
 * | pattern      | matches                              | does not match        |
 * |--------------|--------------------------------------|-----------------------|
 * | `email.*`    | `email.send`, `email.digest`         | `email.send.bulk`     |
 * | `email.**`   | `email.send`, `email.send.bulk`      | `emails.send`         |
 * | `*.daily`    | `reports.daily`                      | `a.reports.daily`     |
 * | `report-*`   | `report-sales`                       | `report-sales.pdf`    |
 * | `**`         | every handler                        |                       |
 */

/** What a pattern may contain: handler-name characters and `*`. */
export const GLOB_PATTERN = /^[A-Za-z0-9_.:*-]{1,128}$/;

/**
 * A predicate matching handler names against any of `patterns` (none: nothing matches).
 * @throws RangeError for a pattern with characters a handler name cannot have.
 *
 * @example
 * const allowed = compileGlobs(["email.*", "reports.**"]);
 * allowed("email.send");        // true
 * allowed("reports.daily.pdf"); // true
 * allowed("billing.charge");    // false
 */
export function compileGlobs(patterns: readonly string[]): (name: string) => boolean {
  if (patterns.length === 0) return () => false;
  const sources = patterns.map(globSource);
  const regex = new RegExp(`^(?:${sources.join("|")})$`);
  return (name) => regex.test(name);
}

function globSource(pattern: string): string {
  if (!GLOB_PATTERN.test(pattern)) {
    throw new RangeError(
      `handler pattern ${JSON.stringify(pattern)} may only contain A–Z a–z 0–9 _ . : - and *`,
    );
  }
  return pattern
    .split("**")
    .map((part) =>
      part
        .split("*")
        .map((literal) => literal.replaceAll(".", "\\."))
        .join("[^.]*"),
    )
    .join(".*");
}
