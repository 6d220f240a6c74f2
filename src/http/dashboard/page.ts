/**
 * @module
 * The dashboard page: one self-contained HTML document (inline CSS and script, no external
 * assets, no file reads), so it is served the same way on Node, Vercel and Workers. It holds no
 * data; its script reads the API. The Content-Security-Policy allows exactly the inline style and
 * script by their SHA-256 and network calls to the page's own origin.
 */
import { DASHBOARD_JS } from "./script.ts";
import { DASHBOARD_CSS } from "./style.ts";

/** The page and the policy to serve it with. */
export interface DashboardPage {
  html: string;
  contentSecurityPolicy: string;
}

/** The HTML of the dashboard (static: paths in it are relative to the page). */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>tickwork dashboard</title>
<link rel="icon" href="data:,">
<style>${DASHBOARD_CSS}</style>
</head>
<body>
<header>
  <h1>tickwork</h1>
  <span class="meta" id="instance"></span>
  <span class="meta" id="updated"></span>
  <button type="button" id="forget" hidden>Forget key</button>
</header>
<main>
  <form id="auth" hidden aria-labelledby="auth-title">
    <h2 id="auth-title">API key</h2>
    <p id="auth-reason"></p>
    <label for="key">Key</label>
    <input id="key" name="key" type="password" autocomplete="off" required>
    <button type="submit">Use this key</button>
    <span class="empty">Kept for this tab only (sessionStorage).</span>
  </form>
  <div id="notice" role="status" aria-live="polite" hidden></div>
  <div class="cards">
    <section aria-labelledby="h-depth">
      <h2 id="h-depth">Queue depth</h2>
      <div><span class="big" id="depth">–</span><span class="unit">due, not started</span></div>
      <svg class="spark" id="depth-chart" viewBox="0 0 100 40" preserveAspectRatio="none" role="img" aria-labelledby="h-depth"></svg>
    </section>
    <section aria-labelledby="h-rate">
      <h2 id="h-rate">Throughput</h2>
      <div><span class="big" id="rate">–</span><span class="unit">succeeded / s</span></div>
      <svg class="spark" id="rate-chart" viewBox="0 0 100 40" preserveAspectRatio="none" role="img" aria-labelledby="h-rate"></svg>
    </section>
    <section aria-labelledby="h-jobs-stats">
      <h2 id="h-jobs-stats">Jobs</h2>
      <dl id="jobs-stats"></dl>
    </section>
    <section aria-labelledby="h-leader">
      <h2 id="h-leader">Leader</h2>
      <dl id="leader-stats"></dl>
    </section>
    <section aria-labelledby="h-degradation">
      <h2 id="h-degradation">Degradation</h2>
      <dl id="degradation-stats"></dl>
    </section>
    <section id="queue-card" aria-labelledby="h-queue" hidden>
      <h2 id="h-queue">Queue <span class="unit" id="queue-kind"></span></h2>
      <dl id="queue-stats"></dl>
    </section>
    <section aria-labelledby="h-nodes">
      <h2 id="h-nodes">Nodes</h2>
      <dl id="nodes-stats"></dl>
    </section>
  </div>
  <section aria-labelledby="h-fleet">
    <h2 id="h-fleet">Fleet</h2>
    <table aria-labelledby="h-fleet">
      <thead><tr><th scope="col">Node</th><th scope="col">Status</th><th scope="col">Roles</th><th scope="col">Host</th><th scope="col">Transport</th><th scope="col">In flight</th><th scope="col">Capabilities</th><th scope="col">Version</th><th scope="col">Last seen</th></tr></thead>
      <tbody id="nodes"></tbody>
    </table>
  </section>
  <section aria-labelledby="h-schedules">
    <h2 id="h-schedules">Schedules</h2>
    <table aria-labelledby="h-schedules">
      <thead><tr><th scope="col">ID</th><th scope="col">Handler</th><th scope="col">Schedule</th><th scope="col">Status</th><th scope="col">Next run</th><th scope="col" title="The fire time of the last occurrence dispatched (the tick dispatches ahead)">Dispatched up to</th><th scope="col" title="Occurrences dispatched so far, skipped ones too">Dispatched</th><th scope="col"><span class="empty">Actions</span></th></tr></thead>
      <tbody id="schedules"></tbody>
    </table>
  </section>
  <section aria-labelledby="h-jobs">
    <h2 id="h-jobs">Recent jobs</h2>
    <form id="job-filters" class="filters" aria-label="Job filters">
      <label for="f-status">Status</label>
      <select id="f-status" name="status">
        <option value="">any</option><option>waiting</option><option>queued</option><option>running</option><option>succeeded</option><option>failed</option><option>dead</option><option>cancelled</option><option>skipped</option>
      </select>
      <label for="f-handler">Handler</label>
      <input id="f-handler" name="handler" autocomplete="off" spellcheck="false">
      <label for="f-schedule">Schedule ID</label>
      <input id="f-schedule" name="scheduleId" autocomplete="off" spellcheck="false">
      <button type="submit">Filter</button>
      <button type="button" id="f-clear">Clear</button>
      <span class="empty" id="jobs-filter-state"></span>
    </form>
    <table aria-labelledby="h-jobs">
      <thead><tr><th scope="col">ID</th><th scope="col">Handler</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Duration</th><th scope="col">Error</th><th scope="col">When</th></tr></thead>
      <tbody id="jobs"></tbody>
    </table>
    <nav class="pager" aria-label="Job pages">
      <button type="button" id="jobs-newer" disabled>Newer</button>
      <span class="empty" id="jobs-page">page 1</span>
      <button type="button" id="jobs-older" disabled>Older</button>
    </nav>
  </section>
  <section id="job-detail" aria-labelledby="h-job" hidden>
    <div class="detail-head">
      <h2 id="h-job">Job <span class="id" id="job-id"></span></h2>
      <button type="button" id="job-close" aria-label="Close job detail">Close</button>
    </div>
    <p id="job-problem" class="error" role="alert" hidden></p>
    <dl id="job-fields" class="fields"></dl>
    <h3 id="h-job-input">Input</h3>
    <pre id="job-input" aria-labelledby="h-job-input"></pre>
    <div id="job-result-box" hidden><h3 id="h-job-result">Result</h3><pre id="job-result" aria-labelledby="h-job-result"></pre></div>
    <div id="job-error-box" hidden><h3 id="h-job-error">Error</h3><pre id="job-error" class="error" aria-labelledby="h-job-error"></pre></div>
    <h3 id="h-job-events">Events</h3>
    <table aria-labelledby="h-job-events">
      <thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Attempt</th><th scope="col">Error</th></tr></thead>
      <tbody id="job-events"></tbody>
    </table>
    <p id="job-events-state" class="empty" role="status" hidden></p>
    <h3 id="h-job-logs">Log</h3>
    <table aria-labelledby="h-job-logs">
      <thead><tr><th scope="col">When</th><th scope="col">Attempt</th><th scope="col">Level</th><th scope="col">Message</th><th scope="col">Fields</th></tr></thead>
      <tbody id="job-logs"></tbody>
    </table>
  </section>
  <section aria-labelledby="h-hooks">
    <h2 id="h-hooks">Webhooks</h2>
    <table aria-labelledby="h-hooks">
      <thead><tr><th scope="col">Endpoint</th><th scope="col">Scheme</th><th scope="col">Handler</th><th scope="col">Recent</th><th scope="col">Last delivery</th><th scope="col">Outcome</th><th scope="col">Event</th><th scope="col">Job</th></tr></thead>
      <tbody id="hooks"></tbody>
    </table>
  </section>
  <section aria-labelledby="h-dead">
    <h2 id="h-dead">Dead letters</h2>
    <table aria-labelledby="h-dead">
      <thead><tr><th scope="col">ID</th><th scope="col">Handler</th><th scope="col">Attempts</th><th scope="col">Error</th><th scope="col">Died</th><th scope="col"><span class="empty">Actions</span></th></tr></thead>
      <tbody id="dead"></tbody>
    </table>
  </section>
</main>
<script>${DASHBOARD_JS}</script>
</body>
</html>
`;

let page: Promise<DashboardPage> | undefined;

/**
 * The page with its Content-Security-Policy (hashed once per process or isolate).
 *
 * @example
 * const { html, contentSecurityPolicy } = await dashboardPage();
 */
export function dashboardPage(): Promise<DashboardPage> {
  page ??= Promise.all([sha256(DASHBOARD_CSS), sha256(DASHBOARD_JS)]).then(([css, js]) => ({
    html: DASHBOARD_HTML,
    contentSecurityPolicy: [
      "default-src 'none'",
      `script-src 'sha256-${js}'`,
      `style-src 'sha256-${css}'`,
      "connect-src 'self'",
      "img-src 'self' data:",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join("; "),
  }));
  return page;
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  let binary = "";
  for (const byte of new Uint8Array(digest)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
