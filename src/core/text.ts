/**
 * @module
 * Text checks shared by the schemas: well-formed Unicode.
 */

/** A lone surrogate: a high one not followed by a low one, or a low one not after a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * True when `text` is well-formed UTF-16 (no lone surrogates), like
 * `String.prototype.isWellFormed`. A lone surrogate has no UTF-8 encoding: as bytes (a Redis key)
 * it becomes U+FFFD, so `"k-\ud800"` and `"k-\udbff"` would be the same key.
 *
 * @example
 * isWellFormedText("k-😀");     // true
 * isWellFormedText("k-\ud800"); // false
 */
export function isWellFormedText(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}
