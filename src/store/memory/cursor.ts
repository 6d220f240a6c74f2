/**
 * @module
 * Newest-first paging for the memory store's listings, with the same order and cursor meaning as
 * the Redis sorted sets: score descending, ties by id descending; the cursor names the last item
 * returned (its score and id), so deleting items between pages neither repeats nor skips any.
 */
import { ValidationError } from "../../core/errors.ts";
import type { Page } from "../port.ts";

/** One listable item with the score of its index (createdAt, fire time, time of death). */
export interface Scored<T> {
  score: number;
  id: string;
  item: T;
}

/** Sorts `entries` newest first and returns the page after `cursor`. */
export function paginate<T>(entries: Scored<T>[], limit: number, cursor?: string): Page<T> {
  const sorted = entries.sort(newestFirst);
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  const rest = after ? sorted.filter((e) => newestFirst(after, e) < 0) : sorted;
  const items = rest.slice(0, Math.max(0, limit));
  const last = items.at(-1);
  const page: Page<T> = { items: items.map((e) => e.item) };
  if (last && rest.length > items.length) page.cursor = encodeCursor(last.score, last.id);
  return page;
}

function newestFirst(a: { score: number; id: string }, b: { score: number; id: string }): number {
  if (a.score !== b.score) return b.score - a.score;
  return a.id === b.id ? 0 : a.id < b.id ? 1 : -1;
}

function encodeCursor(score: number, id: string): string {
  const bytes = new TextEncoder().encode(JSON.stringify([score, id]));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

function decodeCursor(cursor: string): { score: number; id: string } {
  try {
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === "number" &&
      typeof value[1] === "string"
    ) {
      return { score: value[0], id: value[1] };
    }
  } catch {
    // fall through: any malformed cursor is the caller's error
  }
  throw new ValidationError("invalid cursor", [
    { path: "cursor", message: "not a cursor of this listing" },
  ]);
}
