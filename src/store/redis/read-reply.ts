/**
 * @module
 * The entries of an `XREAD` or `XREADGROUP` reply for one stream, in whichever shape the client
 * gives it: RESP2's `[[stream, entries]]`; RESP3's map as ioredis 6 gives it by default (its
 * protocol, and its "legacy" reply mapping, flatten the map to `[stream, entries]`); or as an
 * object (`replyMapping: "resp3"`). Reading the RESP2 shape alone, a Streams worker on ioredis 6
 * took a stream's name for an entry and failed every pull.
 */

/**
 * The entries the reply holds for the one stream read, `[]` for none (`null`: the block ended).
 *
 * @example
 * entriesOfRead([["s", [["1-0", ["f", "v"]]]]]); // [["1-0", ["f", "v"]]]
 * entriesOfRead(["s", [["1-0", ["f", "v"]]]]);   // the same, from a RESP3 client
 */
export function entriesOfRead<Entry>(reply: unknown): Entry[] {
  let entries: unknown;
  if (Array.isArray(reply)) entries = Array.isArray(reply[0]) ? reply[0][1] : reply[1];
  else if (typeof reply === "object" && reply !== null) entries = Object.values(reply)[0];
  return Array.isArray(entries) ? (entries as Entry[]) : [];
}
