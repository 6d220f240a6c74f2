/**
 * @module
 * API keys are kept only as SHA-256 hashes (`sha256:<hex>`). A presented key is hashed and
 * compared with every stored hash in constant time: no comparison ends early, and every candidate
 * is compared whether or not an earlier one matched, so the time taken says nothing about which
 * key (or how much of one) matched. Web Crypto only: the same code runs on Node and Workers.
 *
 * Why a plain SHA-256 and not a slow password hash: API keys are long random strings (32 random
 * bytes from {@link generateKey}), not passwords; nobody can guess one from its hash, and a slow hash
 * would cost every request.
 */

/** Bytes of a SHA-256 digest. */
const DIGEST_BYTES = 32;

/** Matching keys whose digests {@link KeyRing} keeps. */
const KNOWN_KEYS_CACHED = 1_024;

/**
 * The stored form of `key`: `"sha256:"` and the hex SHA-256 of its UTF-8 bytes.
 *
 * @example
 * await hashKey("tw_example"); // "sha256:…64 hex digits…"
 */
export async function hashKey(key: string): Promise<string> {
  return `sha256:${toHex(await digest(key))}`;
}

/**
 * A new random API key: `tw_` and 32 random bytes in base64url (43 characters).
 *
 * @example
 * const key = generateKey(); // "tw_3q2-…"
 */
export function generateKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return `tw_${btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`;
}

/**
 * Finds which entry a presented key belongs to.
 *
 * @example
 * const ring = new KeyRing([{ hash: await hashKey("k1"), value: "tenant-a" }]);
 * await ring.find("k1"); // "tenant-a"
 * await ring.find("k2"); // undefined
 */
export class KeyRing<T> {
  readonly #digests: Uint8Array[];
  readonly #values: T[];
  /**
   * Digests of keys that matched, so a client presenting its key on every request is hashed once
   * (Web Crypto's digest is asynchronous and costs more than the rest of a small request). Only
   * matching keys enter it, so unknown keys cannot fill it; bounded, cleared when full.
   */
  readonly #known = new Map<string, Uint8Array>();

  /**
   * @param entries each with a `sha256:<hex>` hash; hashes must be distinct.
   * @throws RangeError for a malformed hash.
   */
  constructor(entries: readonly { hash: string; value: T }[]) {
    this.#digests = entries.map((entry) => fromHash(entry.hash));
    this.#values = entries.map((entry) => entry.value);
  }

  get size(): number {
    return this.#values.length;
  }

  /** The value of the entry whose hash is the presented key's, if any. */
  async find(presented: string): Promise<T | undefined> {
    return this.lookup(presented);
  }

  /**
   * As {@link find}, but at once (no promise) for a key that matched before, whose digest is
   * remembered: a server that sees the same keys on every request waits for nothing.
   *
   * @example
   * const found = ring.lookup(key);
   * const value = found instanceof Promise ? await found : found;
   */
  lookup(presented: string): T | undefined | Promise<T | undefined> {
    const known = this.#known.get(presented);
    if (known !== undefined) return this.#match(presented, known);
    return digest(presented).then((candidate) => this.#match(presented, candidate));
  }

  #match(presented: string, candidate: Uint8Array): T | undefined {
    // Compare with every entry, all 32 bytes each; remember the match without branching on it.
    let found = -1;
    for (let i = 0; i < this.#digests.length; i++) {
      const stored = this.#digests[i]!;
      let diff = 0;
      for (let b = 0; b < DIGEST_BYTES; b++) diff |= stored[b]! ^ candidate[b]!;
      // equal: 1 when diff is 0, else 0 (diff is 0–255).
      const equal = ((diff - 1) >>> 8) & 1;
      found = (found & (equal - 1)) | (i & -equal);
    }
    if (found < 0) return undefined;
    if (!this.#known.has(presented)) {
      if (this.#known.size >= KNOWN_KEYS_CACHED) this.#known.clear();
      this.#known.set(presented, candidate);
    }
    return this.#values[found];
  }
}

async function digest(text: string): Promise<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

function fromHash(hash: string): Uint8Array {
  const match = /^sha256:([0-9a-f]{64})$/.exec(hash);
  if (!match) throw new RangeError('a key hash must be "sha256:" and 64 lowercase hex digits');
  const hex = match[1]!;
  const out = new Uint8Array(DIGEST_BYTES);
  for (let i = 0; i < DIGEST_BYTES; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function toHex(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
