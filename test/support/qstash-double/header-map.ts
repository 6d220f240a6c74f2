/**
 * A publish's headers as the double reads them: names in lower case, a repeated name's values
 * joined with `", "`, values trimmed — what `Headers` keeps — without `Headers`' per-call
 * validation and sorting (most of the double's CPU per batched message when it used `Headers`).
 * A name that is not an HTTP token, or a value with CR, LF or NUL, is refused as `Headers` refuses
 * it.
 */
import { PublishRejection } from "./message.ts";

/** RFC 9110 token. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What `Headers` refuses in a value. */
const FORBIDDEN = /[\r\n\0]/;

/** What {@link parseMessage} needs of a publish's headers (a `Headers` has it too). */
export interface HeaderLookup extends Iterable<[string, string]> {
  /** The value of a lower-case `name`, or `null`. */
  get(name: string): string | null;
}

export class HeaderMap implements HeaderLookup {
  readonly #values = new Map<string, string>();

  append(name: string, value: string): void {
    if (!TOKEN.test(name))
      throw new PublishRejection(`invalid header name ${JSON.stringify(name)}`);
    if (FORBIDDEN.test(value)) throw new PublishRejection(`invalid value of header ${name}`);
    const key = name.toLowerCase();
    const text = value.trim();
    const before = this.#values.get(key);
    this.#values.set(key, before === undefined ? text : `${before}, ${text}`);
  }

  get(name: string): string | null {
    return this.#values.get(name) ?? null;
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.#values.entries();
  }
}
