/**
 * @module
 * The dashboard script's Webhooks table (inlined into the IIFE of `script.ts`, sharing its
 * helpers: `$`, `node`, `badge`, `timeCell`, `fillTable`, `num`). It draws `v1/hooks`: each
 * endpoint of the key's tenant with its scheme, handler and last delivery (when, outcome, the
 * sender's event id, the job), and how many of its recent deliveries were replays. Every value
 * reaches the DOM as text.
 */

/** The Webhooks table's part of the dashboard script (plain ES2020, inside the page's IIFE). */
export const HOOKS_JS = `
  // ── webhooks: endpoints and their last deliveries ───────────────────────
  function renderHooks(r) {
    fillTable($("hooks"), r.items.map((e) => {
      const last = e.deliveries[0];
      const outcome = node("td");
      if (last) outcome.append(badge(last.outcome));
      const replays = e.deliveries.filter((d) => d.outcome === "replayed").length;
      return [node("td", e.name, "id"), node("td", e.scheme), node("td", e.handler),
        node("td", num(e.deliveries.length) + (replays ? " (" + num(replays) + " replayed)" : ""), "num"),
        last ? timeCell(last.at) : node("td", "never", "empty"), outcome,
        node("td", last && last.eventId ? last.eventId : "–", "id"),
        node("td", last ? last.jobId : "–", "id")];
    }), 8, "No webhook endpoints.");
  }
`;
