/**
 * @module
 * The dashboard script's job events and placement (inlined into the IIFE of `script.ts`, used by
 * the job detail of `script-job-detail.ts`, sharing their helpers).
 *
 * Events: `v1/events?jobId=<id>&since=…` — the job's lifecycle events, oldest first, each with
 * its time, type, attempt and error. The first read starts a little before the job's creation (a
 * minute before `createdAt`; an occurrence's `job.dispatched` comes before it, so ten minutes
 * before its `fireAt`), then every read goes on from the `last` event id the API gave: the log is
 * only appended to, so a poll reads only what is new. One request examines at most 1,000 events of
 * the log (`docs/api.md`); while the API answers `more` the panel reads on, at most
 * `EVENT_PAGES` requests per poll, and says when its scan stopped early (it goes on at the next
 * poll).
 *
 * Placement: the job's `placement` (group, capabilities, allowed and forbidden nodes), the `node`
 * that began its latest attempt and its `refused` (the last node that refused it, why and when),
 * marked "waiting for a matching node" while the job is queued. Every value reaches the DOM as
 * text.
 */

/** The events and placement part of the dashboard script (plain ES2020, inside the page's IIFE). */
export const JOB_EVENTS_JS = `
  // ── jobs: one job's events and placement ────────────────────────────────
  const EVENT_PAGES = 5;
  /** The open job's events read so far, and where to read on: { id, items, since, more, reading }. */
  let jobEvents = { id: "", items: [], since: "", more: false, reading: null };

  /** Where the first read starts: epoch ms a little before the job's first event. */
  function eventsStart(j) {
    const created = Date.parse(j.createdAt);
    let start = Number.isFinite(created) ? created - 60000 : 0;
    const fire = j.fireAt ? Date.parse(j.fireAt) : NaN;
    if (Number.isFinite(fire)) start = Math.min(start, fire - 600000);
    return String(Math.max(0, Math.floor(start)));
  }

  /** Reads the job's new events (one read at a time per job); resolves to its state. */
  function readJobEvents(j) {
    if (jobEvents.id !== j.id) {
      jobEvents = { id: j.id, items: [], since: eventsStart(j), more: false, reading: null };
    }
    const state = jobEvents;
    if (!state.reading) {
      state.reading = readOn(state).finally(() => { state.reading = null; });
    }
    return state.reading;
  }

  async function readOn(state) {
    for (let i = 0; i < EVENT_PAGES; i++) {
      const page = await api("GET", "v1/events?limit=100&jobId=" + encodeURIComponent(state.id) +
        "&since=" + encodeURIComponent(state.since));
      state.items.push(...page.items);
      if (page.last) state.since = page.last;
      state.more = page.more === true;
      if (!state.more) break;
    }
    return state;
  }

  function forgetJobEvents() {
    jobEvents = { id: "", items: [], since: "", more: false, reading: null };
  }

  function renderJobEvents(state) {
    fillTable($("job-events"), state.items.map((e) => {
      const type = node("td");
      type.append(badge(String(e.type).replace(/^job\\./, "")));
      type.title = e.type;
      return [timeCell(e.at), type, node("td", e.attempt === undefined ? "" : num(e.attempt), "num"),
        node("td", errorText(e.error), "error")];
    }), 4, state.more ? "No events found yet." : "No events for this job in the log (it keeps the newest only).");
    $("job-events").setAttribute("aria-busy", state.more ? "true" : "false");
    $("job-events-state").textContent = state.more
      ? "The scan of the event log stopped early (each request examines at most 1,000 events): " +
        "reading on after event " + state.since + " at the next refresh."
      : "";
    $("job-events-state").hidden = !state.more;
  }

  function placementText(p) {
    if (!p) return "any node";
    const parts = [];
    if (p.group !== undefined) parts.push("group " + p.group);
    const caps = p.capabilities ? Object.entries(p.capabilities) : [];
    if (caps.length) parts.push("capabilities " + caps.map(([k, v]) => iso(k) + "=" + iso(v)).join(", "));
    if (p.nodes && p.nodes.length) parts.push("only nodes " + p.nodes.map(iso).join(", "));
    if (p.notNodes && p.notNodes.length) parts.push("not nodes " + p.notNodes.map(iso).join(", "));
    return parts.length ? parts.join("; ") : "any node";
  }

  /** The placement rows of the job's fields. */
  function placementPairs(j) {
    const pairs = [["Placement", placementText(j.placement)], ["Node", j.node === undefined ? "–" : j.node]];
    if (j.refused) {
      const refused = node("span", null, "refused");
      if (j.status === "queued") {
        refused.append(node("span", "waiting for a matching node", "badge s-waiting waiting"), " ");
      }
      refused.append(node("span", iso(j.refused.node), "id"), ": ", node("span", iso(j.refused.reason), "reason"), " ");
      const at = when(j.refused.at);
      at.className = "unit";
      refused.append(at);
      pairs.push(["Refused by", refused]);
    }
    return pairs;
  }
`;
