/**
 * @module
 * The dashboard's stylesheet, inlined into the page (no external assets). Light and dark.
 */

/** The CSS of the dashboard page. */
export const DASHBOARD_CSS = `
:root {
  color-scheme: light dark;
  --bg: #f7f7f8; --panel: #fff; --text: #1c1d21; --muted: #60646c; --line: #e2e3e6;
  --accent: #2458d6; --ok: #18794e; --warn: #a35200; --bad: #c4271f; --chart: #2458d6;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #111215; --panel: #1a1b1f; --text: #e8e9ec; --muted: #9a9ea6; --line: #2c2e34;
    --accent: #7aa2ff; --ok: #4cc38a; --warn: #f0a64a; --bad: #ff6b60; --chart: #7aa2ff;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); }
header { display: flex; align-items: baseline; gap: 1rem; padding: 0.8rem 1.5rem;
  border-bottom: 1px solid var(--line); background: var(--panel); }
header h1 { font-size: 1.15rem; margin: 0; }
header .meta { color: var(--muted); font-size: 0.85rem; }
header #instance { margin-left: auto; }
main { padding: 1rem 1.5rem 2rem; display: grid; gap: 1rem; max-width: 1280px; margin: 0 auto; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 0.8rem 1rem; }
h2 { font-size: 0.95rem; margin: 0 0 0.6rem; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(210px, 1fr)); gap: 1rem; }
.cards section { margin: 0; }
dl { margin: 0; display: grid; grid-template-columns: auto 1fr; gap: 0.15rem 0.8rem; }
dt { color: var(--muted); }
dd { margin: 0; font-variant-numeric: tabular-nums; text-align: right; }
.big { font-size: 1.6rem; font-weight: 600; font-variant-numeric: tabular-nums; }
.unit { color: var(--muted); font-size: 0.85rem; margin-left: 0.3rem; }
h2 .unit { font-weight: 400; margin-left: 0; }
svg.spark { display: block; width: 100%; height: 48px; margin-top: 0.3rem; }
svg.spark polyline { fill: none; stroke: var(--chart); stroke-width: 1.5; vector-effect: non-scaling-stroke; }
svg.spark polygon { fill: var(--chart); opacity: 0.12; }
table { width: 100%; border-collapse: collapse; font-size: 0.9rem; }
th, td { text-align: left; padding: 0.35rem 0.5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 500; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.82rem; word-break: break-all; }
td.error { color: var(--bad); max-width: 28rem; overflow-wrap: anywhere; }
td.actions { white-space: nowrap; text-align: right; }
.empty { color: var(--muted); }
.badge { display: inline-block; padding: 0 0.45rem; border-radius: 999px; font-size: 0.8rem;
  border: 1px solid currentColor; white-space: nowrap; }
.s-active, .s-succeeded, .s-normal, .s-live { color: var(--ok); }
.s-paused, .s-queued, .s-waiting, .s-running, .s-degraded, .s-failed, .s-stale { color: var(--warn); }
.s-dead, .s-critical, .s-cancelled { color: var(--bad); }
.s-completed, .s-skipped { color: var(--muted); }
button { font: inherit; font-size: 0.85rem; padding: 0.2rem 0.65rem; border-radius: 6px; cursor: pointer;
  border: 1px solid var(--line); background: var(--bg); color: var(--text); }
button:hover { border-color: var(--accent); }
button:focus-visible, input:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
button.danger { color: var(--bad); }
button + button { margin-left: 0.35rem; }
#notice { padding: 0.6rem 1rem; border-radius: 8px; border: 1px solid var(--line); background: var(--panel); }
#notice.error { border-color: var(--bad); color: var(--bad); }
form#auth { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
form#auth input { font: inherit; padding: 0.3rem 0.5rem; min-width: 18rem; border-radius: 6px;
  border: 1px solid var(--line); background: var(--bg); color: var(--text); }
form.filters { display: flex; flex-wrap: wrap; gap: 0.4rem 0.6rem; align-items: center; margin-bottom: 0.6rem; }
form.filters label { color: var(--muted); font-size: 0.85rem; }
form.filters input, form.filters select { font: inherit; font-size: 0.85rem; padding: 0.2rem 0.4rem; border-radius: 6px;
  border: 1px solid var(--line); background: var(--bg); color: var(--text); }
form.filters input { width: 11rem; }
nav.pager { display: flex; gap: 0.6rem; align-items: center; justify-content: flex-end; margin-top: 0.5rem; }
nav.pager button + button { margin-left: 0; }
button.link { border: 0; background: none; padding: 0; color: var(--accent); text-align: left;
  font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.82rem; word-break: break-all; }
button.link:hover { text-decoration: underline; }
tr.selected { background: color-mix(in srgb, var(--accent) 10%, transparent); }
.detail-head { display: flex; align-items: baseline; justify-content: space-between; gap: 1rem; }
.detail-head .id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-weight: 400; word-break: break-all; }
h3 { font-size: 0.85rem; margin: 0.8rem 0 0.3rem; color: var(--muted); font-weight: 500; }
dl.fields { grid-template-columns: max-content 1fr; }
dl.fields dd { text-align: left; overflow-wrap: anywhere; }
pre { margin: 0; padding: 0.5rem 0.7rem; background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  font-size: 0.82rem; max-height: 18rem; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
pre.error, p.error { color: var(--bad); }
td.message, td.fields { overflow-wrap: anywhere; }
td.fields { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.8rem; color: var(--muted); }
.refused .badge.waiting { font-weight: 600; }
.refused .reason { overflow-wrap: anywhere; }
.l-warn { color: var(--warn); }
.l-error { color: var(--bad); }
[hidden] { display: none !important; }
`;
