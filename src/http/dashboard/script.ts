/**
 * @module
 * The dashboard's browser script, inlined into the page. It polls `v1/stats`, `v1/nodes` (the
 * Nodes card and the Fleet table), the listings and the open job every 3 s (`?refresh=<seconds>`, 1–60), draws the charts from the samples it keeps (the last 60),
 * shows the transport's queue (the Queue card) only when `v1/stats` has a `queue` member, and
 * calls the API for the buttons. Every value reaches the DOM through `textContent` or an
 * attribute, never as markup. A 401 asks for an API key (kept in `sessionStorage`); any other
 * refusal (a read-only key pausing a schedule: 403) is shown as the API's own `detail`.
 *
 * Its API paths start from the directory of the page's own path (`/api/tickwork/dashboard` →
 * `/api/tickwork/`), so the page works under any base path or mount point, and also when served
 * as `…/dashboard/` (an app with `strict: false`), where plain relative URLs would resolve under
 * `dashboard/`.
 *
 * The jobs list with its filters and pages (`script-jobs.ts`) and a job's detail
 * (`script-job-detail.ts`, with its events and placement from `script-job-events.ts`) are inlined
 * into the same function, sharing these helpers.
 */
import { HOOKS_JS } from "./script-hooks.ts";
import { JOB_DETAIL_JS } from "./script-job-detail.ts";
import { JOB_EVENTS_JS } from "./script-job-events.ts";
import { JOB_STREAM_JS } from "./script-job-stream.ts";
import { JOBS_JS } from "./script-jobs.ts";

/** The JavaScript of the dashboard page (plain ES2020, no modules). */
export const DASHBOARD_JS = `
(() => {
  "use strict";
  // ?refresh=<seconds> (1–60) sets how often it polls; 3 s by default.
  const asked = Number(new URLSearchParams(location.search).get("refresh"));
  const POLL_MS = asked >= 1 && asked <= 60 ? asked * 1000 : 3000;
  const SAMPLES = 60;
  const SVG = "http://www.w3.org/2000/svg";
  // The app's root as the page was reached: its path without a trailing slash and "dashboard".
  const BASE = location.pathname.replace(/\\/+$/, "").replace(/[^/]*$/, "");
  // One key per app: two dashboards mounted on one origin (/a/, /b/) would otherwise send each
  // other's key to their own API.
  const KEY = "tickwork.apiKey:" + BASE;
  /** { t, backlog, succeeded } per poll, newest last. */
  const samples = [];
  let timer = 0;
  let skew = 0;
  let noticeIsFromPoll = false;

  const $ = (id) => document.getElementById(id);

  class Refused extends Error {}

  /** The key, also kept here for when storage is off (then it lives until a reload). */
  let memoryKey = "";
  function storedKey() {
    try { return sessionStorage.getItem(KEY) || memoryKey; } catch { return memoryKey; }
  }
  function storeKey(key) {
    memoryKey = key;
    try {
      if (key) sessionStorage.setItem(KEY, key); else sessionStorage.removeItem(KEY);
    } catch { /* storage off */ }
  }

  async function api(method, path) {
    const headers = { accept: "application/json" };
    const key = storedKey();
    if (key) headers.authorization = "Bearer " + key;
    const res = await fetch(BASE + path, { method, headers, cache: "no-store" });
    const text = await res.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch { body = null; }
    if (res.status === 401) {
      askForKey(key ? "The API refused that key." : "The API needs a key to show this.");
      throw new Refused("unauthorized");
    }
    if (!res.ok) {
      const detail = body && typeof body.detail === "string" ? body.detail : res.statusText;
      throw new Error(res.status + ": " + detail);
    }
    return body;
  }

  // ── formatting ──────────────────────────────────────────────────────────
  function duration(ms) {
    if (!Number.isFinite(ms)) return "–";
    const abs = Math.abs(ms);
    if (abs < 1000) return Math.round(ms) + " ms";
    if (abs < 60000) return (ms / 1000).toFixed(abs < 10000 ? 2 : 1) + " s";
    const s = Math.round(abs / 1000);
    const sign = ms < 0 ? "-" : "";
    if (s < 3600) return sign + Math.floor(s / 60) + "m " + (s % 60) + "s";
    if (s < 86400) return sign + Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
    return sign + Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
  }
  function relative(iso) {
    if (!iso) return "–";
    const ms = Date.parse(iso) - (Date.now() + skew);
    if (Math.abs(ms) < 1000) return "now";
    return ms > 0 ? "in " + duration(ms) : duration(-ms) + " ago";
  }
  function num(n) {
    if (typeof n !== "number" || !Number.isFinite(n)) return "–";
    return Number.isInteger(n) ? n.toLocaleString("en-US") : n.toLocaleString("en-US", { maximumFractionDigits: 2 });
  }

  // ── DOM helpers (text only) ─────────────────────────────────────────────
  function node(tag, text, className) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (className) e.className = className;
    return e;
  }
  // A value joined with others into one text, between FSI and PDI: a direction override in it
  // (U+202E) stays inside it instead of reversing its neighbours ("gpj.exe" read as "exe.jpg").
  function iso(text) {
    return "\\u2068" + String(text) + "\\u2069";
  }
  function errorText(error) {
    return error ? iso(error.name) + ": " + iso(error.message) : "";
  }
  function badge(status) {
    const b = node("span", status, "badge s-" + String(status).replace(/[^a-z]/g, ""));
    return b;
  }
  function timeCell(iso) {
    const td = node("td", relative(iso));
    if (iso) td.title = iso;
    return td;
  }
  function button(label, name, onClick, danger) {
    const b = node("button", label, danger ? "danger" : "");
    b.type = "button";
    b.setAttribute("aria-label", name);
    b.addEventListener("click", async () => {
      b.disabled = true;
      try { await onClick(); } finally { b.disabled = false; }
    });
    return b;
  }
  function fillList(dl, pairs) {
    dl.replaceChildren();
    for (const [label, value] of pairs) {
      dl.append(node("dt", label));
      const dd = node("dd");
      if (value instanceof Node) dd.append(value); else dd.textContent = String(value);
      dl.append(dd);
    }
  }
  function fillTable(tbody, rows, columns, empty) {
    tbody.replaceChildren();
    if (rows.length === 0) {
      const tr = node("tr");
      const td = node("td", empty, "empty");
      td.colSpan = columns;
      tr.append(td);
      tbody.append(tr);
      return;
    }
    for (const cells of rows) {
      const tr = node("tr");
      tr.append(...cells);
      tbody.append(tr);
    }
  }

  // ── notices and the key form ────────────────────────────────────────────
  function notice(text, isError, fromPoll) {
    const n = $("notice");
    n.textContent = text;
    n.className = isError ? "error" : "";
    n.hidden = false;
    noticeIsFromPoll = Boolean(fromPoll);
  }
  function clearPollNotice() {
    if (noticeIsFromPoll) $("notice").hidden = true;
  }
  function askForKey(reason) {
    clearTimeout(timer);
    $("auth-reason").textContent = reason;
    $("auth").hidden = false;
    $("key").focus();
  }

  // ── charts ──────────────────────────────────────────────────────────────
  function sparkline(svg, values, label) {
    svg.replaceChildren();
    const title = document.createElementNS(SVG, "title");
    title.textContent = label;
    svg.append(title);
    if (values.length === 0) return;
    const max = Math.max(1, ...values);
    const step = 100 / (SAMPLES - 1);
    const x0 = 100 - (values.length - 1) * step;
    const points = values.map((v, i) => (x0 + i * step).toFixed(2) + "," + (38 - (v / max) * 36).toFixed(2));
    if (points.length === 1) points.unshift("0," + points[0].split(",")[1]);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", points.join(" "));
    const area = document.createElementNS(SVG, "polygon");
    area.setAttribute("points", points[0].split(",")[0] + ",40 " + points.join(" ") + " 100,40");
    svg.append(area, line);
  }

  // ── rendering ───────────────────────────────────────────────────────────
  function renderStats(s) {
    skew = Date.parse(s.now) - Date.now();
    samples.push({ t: Date.parse(s.now), backlog: s.backlog, succeeded: s.totals.succeeded });
    if (samples.length > SAMPLES) samples.shift();
    const rates = [];
    for (let i = 1; i < samples.length; i++) {
      const dt = (samples[i].t - samples[i - 1].t) / 1000;
      const dn = samples[i].succeeded - samples[i - 1].succeeded;
      rates.push(dt > 0 && dn > 0 ? dn / dt : 0);
    }
    const span = samples.length > 1 ? duration(samples[samples.length - 1].t - samples[0].t) : "one sample";
    $("depth").textContent = num(s.backlog);
    sparkline($("depth-chart"), samples.map((p) => p.backlog),
      "Queue depth over " + span + ": now " + s.backlog + ", peak " + Math.max(...samples.map((p) => p.backlog)));
    const rate = rates.length ? rates[rates.length - 1] : 0;
    $("rate").textContent = rates.length ? num(Math.round(rate * 100) / 100) : "–";
    sparkline($("rate-chart"), rates,
      "Succeeded jobs per second over " + span + ": now " + num(rate) + ", peak " + num(Math.max(0, ...rates)));

    fillList($("jobs-stats"), [
      ["Queued", num(s.jobs.queued)],
      ["Running", num(s.jobs.running)],
      ["Waiting to retry", num(s.jobs.failed)],
      ["Waiting on dependencies", num(s.jobs.waiting)],
      ["Outbox", num(s.outbox)],
      ["Succeeded (total)", num(s.totals.succeeded)],
      ["Dead (total)", num(s.totals.dead)],
      ["Limited deliveries (total)", num(s.totals.limited)],
      ["Refused for placement (total)", num(s.totals.unplaced)],
    ]);
    const l = s.leader;
    fillList($("leader-stats"), [
      ["Holder", l.holder === null ? "none yet" : l.holder],
      ["Lease", l.active ? duration(l.leaseRemainingMs) + " left" : "free"],
      ["Holder since", l.acquiredAt ? relative(l.acquiredAt) : "–"],
      ["Changes", num(l.changes)],
      ["Flaps", num(l.flaps)],
      ["Ticks (total)", num(s.totals.ticks)],
    ]);
    const d = s.degradation;
    fillList($("degradation-stats"), [
      ["Level", badge(d.level)],
      ["Since", d.since ? relative(d.since) : "always"],
      ["Pending", d.pending ? d.pending.level + " (" + relative(d.pending.since) + ")" : "–"],
      ["Lag (avg)", duration(s.averages.lagMs)],
      ["Failure rate", num(Math.round(s.averages.failureRate * 1000) / 10) + " %"],
    ]);
    // The transport's queue (Redis Streams): only when the transport reports one.
    const q = s.queue;
    $("queue-card").hidden = !q;
    $("queue-kind").textContent = q ? q.kind : "";
    if (q) {
      fillList($("queue-stats"), [
        ["Length", num(q.length)],
        ["Pending", num(q.pending)],
        ["Oldest pending", q.pending > 0 ? duration(q.oldestPendingMs) : "–"],
        ["Delayed", num(q.delayed)],
        ["Consumers", num(q.consumers)],
        ["Claimed (all workers)", num(q.claimed)],
      ]);
    } else {
      $("queue-stats").replaceChildren();
    }
    $("instance").textContent = "answered by " + s.instance;
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    $("updated").title = s.now;
  }

  /** Schedule ids with an action under way (their buttons stay disabled until it answered). */
  const acting = new Set();

  /** What a pause or resume left the schedule as (the API answers the schedule). */
  function statusSaid(id, verb) {
    return (s) => s && s.status === "completed"
      ? id + " is completed: nothing is left for it to fire"
      : verb + " " + id;
  }

  /**
   * When a schedule runs next. The tick dispatches occurrences ahead (by its horizon, 65 s for a
   * once-a-minute cron): lastRunAt is the fire time of the last one dispatched, and while it is
   * still ahead an occurrence runs by then (nextRunAt, the next not yet dispatched, comes after
   * it). A paused schedule runs nothing until resumed (what it dispatched is skipped), and a resume
   * counts from then on: its nextRunAt, what was pending at the pause, is not a time it runs at.
   */
  function nextRunCell(s) {
    if (s.status === "paused") {
      const td = node("td", "–");
      td.title = "paused: it fires again once resumed";
      return td;
    }
    const ahead = s.lastRunAt ? Date.parse(s.lastRunAt) - (Date.now() + skew) : 0;
    if (ahead > 0) {
      const td = node("td", "within " + duration(ahead));
      td.title = "dispatched ahead: an occurrence runs by " + s.lastRunAt;
      return td;
    }
    return timeCell(s.nextRunAt);
  }

  function renderSchedules(page) {
    fillTable($("schedules"), page.items.map((s) => {
      const actions = node("td", null, "actions");
      if (s.status === "active") {
        actions.append(button("Pause", "Pause schedule " + s.id, () =>
          act("POST", "v1/schedules/" + encodeURIComponent(s.id) + "/pause", statusSaid(s.id, "Paused"), s.id)));
      } else if (s.status === "paused") {
        actions.append(button("Resume", "Resume schedule " + s.id, () =>
          act("POST", "v1/schedules/" + encodeURIComponent(s.id) + "/resume", statusSaid(s.id, "Resumed"), s.id)));
      }
      actions.append(button("Delete", "Delete schedule " + s.id, () => {
        if (!confirm("Delete schedule " + s.id + "? Its history stays; it will not run again.")) return;
        return act("DELETE", "v1/schedules/" + encodeURIComponent(s.id), "Deleted " + s.id, s.id);
      }, true));
      // A redraw while one of its actions is under way does not offer its buttons again.
      if (acting.has(s.id)) for (const b of actions.querySelectorAll("button")) b.disabled = true;
      const status = node("td");
      status.append(badge(s.status));
      const tr = [node("td", s.id, "id"), node("td", s.handler),
        node("td", s.tz && s.tz !== "UTC" ? s.schedule + " (" + s.tz + ")" : s.schedule),
        status, nextRunCell(s), timeCell(s.lastRunAt), node("td", num(s.runs), "num"), actions];
      return tr;
    }), 8, "No schedules.");
    // The table reads one page: say so when there are more, rather than look like all of them.
    if (page.cursor) {
      const tr = node("tr");
      const td = node("td", "The newest " + num(page.items.length) +
        " are shown; there are more (GET v1/schedules pages through them all).", "empty");
      td.colSpan = 8;
      tr.append(td);
      $("schedules").append(tr);
    }
  }

  function renderDead(items) {
    fillTable($("dead"), items.map((j) => {
      const actions = node("td", null, "actions");
      actions.append(button("Retry", "Retry dead job " + j.id, () =>
        act("POST", "v1/dlq/" + encodeURIComponent(j.id) + "/retry", "Re-queued " + j.id)));
      return [node("td", j.id, "id"), node("td", j.handler), node("td", num(j.attempts), "num"),
        node("td", errorText(j.error), "error"),
        timeCell(j.finishedAt), actions];
    }), 6, "No dead letters.");
  }

  function renderNodes(r) {
    const live = r.nodes.filter((n) => n.status === "live");
    const busy = live.reduce((sum, n) => sum + n.inFlight, 0);
    const slots = live.reduce((sum, n) => sum + n.concurrency, 0);
    fillList($("nodes-stats"), [
      ["Live", num(live.length)],
      ["Stale", num(r.nodes.length - live.length)],
      ["In flight", slots > 0 ? num(busy) + " / " + num(slots) : "–"],
      ["Deployment", r.deployment],
    ]);
    fillTable($("nodes"), r.nodes.map((n) => {
      const status = node("td");
      status.append(badge(n.status));
      const caps = Object.entries(n.capabilities).map(([k, v]) => iso(k) + "=" + iso(v)).join(", ");
      const host = node("td", n.hostname + ":" + n.pid);
      host.title = "started " + n.startedAt;
      return [node("td", n.id, "id"), status, node("td", n.roles.join(", ")), host,
        node("td", n.transport), node("td", n.concurrency > 0 ? n.inFlight + " / " + n.concurrency : "–", "num"),
        node("td", caps || "–"), node("td", n.version), timeCell(n.lastSeen)];
    }), 9, r.note || "No nodes registered.");
  }

${JOBS_JS}
${JOB_DETAIL_JS}
${JOB_STREAM_JS}
${JOB_EVENTS_JS}
${HOOKS_JS}
  // ── polling and actions ─────────────────────────────────────────────────
  let refreshes = 0;
  async function refresh() {
    clearTimeout(timer);
    const seq = ++refreshes;
    try {
      // The jobs list and the open job render themselves (a refused filter is shown in place).
      const [stats, nodes, schedules, dead, hooks] = await Promise.all([
        api("GET", "v1/stats"),
        api("GET", "v1/nodes"),
        api("GET", "v1/schedules?limit=100"),
        api("GET", "v1/dlq?limit=20"),
        api("GET", "v1/hooks"),
        loadJobs(),
        // Also while its stream is followed (script-job-stream.ts): the stream tells of status and
        // progress, not of the job's log lines.
        loadDetail(),
      ]);
      // A later refresh (an action's) began while this one waited: its answers are the newer, and
      // it draws them (these could show a schedule as it was before a pause) and sets the timer.
      if (seq !== refreshes) return;
      renderStats(stats);
      renderNodes(nodes);
      renderSchedules(schedules);
      renderDead(dead.items);
      renderHooks(hooks);
      clearPollNotice();
    } catch (error) {
      if (error instanceof Refused || seq !== refreshes) return;
      notice("Could not refresh: " + error.message, true, true);
    }
    // An action's refresh may overlap a poll: keep one timer.
    clearTimeout(timer);
    timer = setTimeout(refresh, POLL_MS);
  }

  /**
   * Calls the API, says "done" (or what "done" makes of the answer), and refreshes. With a key,
   * one action per key at a time: another asked for while one is under way is dropped.
   */
  async function act(method, path, done, key) {
    if (key !== undefined) {
      if (acting.has(key)) return;
      acting.add(key);
    }
    try {
      const answer = await api(method, path);
      notice((typeof done === "function" ? done(answer) : done) + ".", false);
    } catch (error) {
      if (error instanceof Refused) return;
      notice(error.message, true);
    } finally {
      if (key !== undefined) acting.delete(key);
    }
    await refresh();
  }

  $("auth").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("key").value.trim();
    $("key").value = "";
    storeKey(key);
    $("auth").hidden = true;
    $("forget").hidden = !key;
    // An open job is followed again with the new key (its old connection had the old one).
    if (openJob) followJob(openJob);
    refresh();
  });
  $("forget").addEventListener("click", () => {
    storeKey("");
    // The open job's stream holds the key on its connection: close it (the poll takes over).
    stopFollowing();
    $("forget").hidden = true;
    refresh();
  });
  $("forget").hidden = !storedKey();
  refresh();
})();
`;
