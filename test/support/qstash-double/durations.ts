/**
 * Durations in QStash's headers: `Upstash-Delay` / `Upstash-Timeout` / flow-control `period`
 * (`"10s"`, `"1d10h30m"`; units s m h d) and a destination's `Retry-After` (seconds, an HTTP date,
 * or a Go duration such as `6m5s`; units ns us µs ms s m h), as upstash/docs `qstash/features/retry.mdx`
 * and the SDK describe them.
 */

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** Header durations already read (publishers repeat the same few, such as `Upstash-Timeout`). */
const headerDurations = new Map<string, number | undefined>();

/** `"1d10h30m"` → ms, with units `s m h d`; a bare integer counts as seconds. */
export function parseHeaderDuration(text: string): number | undefined {
  if (headerDurations.has(text)) return headerDurations.get(text);
  const ms = parseDuration(text.trim(), /^(?:\d+[smhd])+$/, /(\d+)([smhd])/g);
  if (headerDurations.size >= 1_000) headerDurations.clear();
  headerDurations.set(text, ms);
  return ms;
}

/** Max wait a destination may ask for; longer asks fall back to the backoff. */
const MAX_RETRY_AFTER_MS = 86_400_000;

/** A destination's `Retry-After`-style value → ms to wait, or `undefined` to use the backoff. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  let ms: number | undefined;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else if (/^[A-Za-z]/.test(text)) {
    const at = Date.parse(text);
    ms = Number.isNaN(at) ? undefined : Math.max(0, at - now);
  } else {
    ms = parseDuration(
      text,
      /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/,
      /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g,
    );
  }
  return ms !== undefined && ms <= MAX_RETRY_AFTER_MS ? ms : undefined;
}

function parseDuration(text: string, whole: RegExp, part: RegExp): number | undefined {
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!whole.test(text)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(part)) ms += Number(amount) * UNIT_MS[unit!]!;
  return ms;
}
