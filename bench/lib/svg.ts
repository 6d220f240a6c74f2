/**
 * @module
 * `bench/results.svg`: the benchmark's figures as a picture, drawn as plain SVG text (no browser,
 * no network, no dependency). Two panels:
 *
 * 1. Ratios against their targets: for each target that is a ratio, a bar of the measured ratio
 *    beside a bar of the target, green when met, red when not; the axis is logarithmic (0.1× to
 *    10×) so 0.5× and 2× sit equally far from 1×.
 * 2. Fire-time error per precision case: p50 and p99 bars and a max tick, on a logarithmic
 *    millisecond axis, with the case's limit drawn as a line.
 */

/** One ratio against its target. */
export interface RatioBar {
  label: string;
  measured: number;
  target: number;
  /** `true`: at least the target is met; `false`: at most. */
  higherIsBetter: boolean;
}

/** One precision case. */
export interface ErrorBar {
  label: string;
  p50: number;
  p99: number;
  max: number;
  limit: number;
}

const W = 960;
const LABEL_W = 330;
const ROW = 26;
const FONT = `font-family="system-ui, -apple-system, Segoe UI, sans-serif"`;
const GREEN = "#2e7d32";
const RED = "#c62828";
const GREY = "#9e9e9e";

function esc(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** x of `value` on a log axis from `lo` to `hi` over `width` px. */
function logX(value: number, lo: number, hi: number, width: number): number {
  const v = Math.min(hi, Math.max(lo, value));
  return (Math.log10(v / lo) / Math.log10(hi / lo)) * width;
}

function fmt(n: number): string {
  return n >= 100 ? String(Math.round(n)) : String(Math.round(n * 100) / 100);
}

function ratioPanel(bars: RatioBar[], top: number): { svg: string; height: number } {
  const lo = 0.1;
  const hi = 10;
  const plotW = W - LABEL_W - 90;
  const out: string[] = [];
  out.push(
    `<text x="16" y="${top + 20}" font-size="16" font-weight="600" ${FONT}>Ratios against their targets (log scale)</text>`,
  );
  const axisTop = top + 34;
  for (const tick of [0.1, 0.2, 0.5, 1, 2, 5, 10]) {
    const x = LABEL_W + logX(tick, lo, hi, plotW);
    out.push(
      `<line x1="${x}" y1="${axisTop}" x2="${x}" y2="${axisTop + bars.length * ROW * 1.5}" stroke="#e0e0e0"/>`,
    );
    out.push(
      `<text x="${x}" y="${axisTop - 3}" font-size="11" text-anchor="middle" fill="#616161" ${FONT}>${tick}×</text>`,
    );
  }
  bars.forEach((bar, i) => {
    const y = axisTop + 6 + i * ROW * 1.5;
    const met = bar.higherIsBetter ? bar.measured >= bar.target : bar.measured <= bar.target;
    const mw = Math.max(1, logX(bar.measured, lo, hi, plotW));
    const tw = Math.max(1, logX(bar.target, lo, hi, plotW));
    const sense = bar.higherIsBetter ? "≥" : "≤";
    out.push(
      `<text x="${LABEL_W - 8}" y="${y + 15}" font-size="12" text-anchor="end" ${FONT}>${esc(bar.label)}</text>`,
    );
    out.push(
      `<rect x="${LABEL_W}" y="${y}" width="${mw}" height="12" fill="${met ? GREEN : RED}"><title>${esc(`${bar.label}: ${fmt(bar.measured)}× (target ${sense} ${fmt(bar.target)}×)`)}</title></rect>`,
    );
    out.push(`<rect x="${LABEL_W}" y="${y + 13}" width="${tw}" height="8" fill="${GREY}"/>`);
    out.push(
      `<text x="${LABEL_W + Math.max(mw, tw) + 6}" y="${y + 15}" font-size="11" ${FONT}>${fmt(bar.measured)}× (target ${sense} ${fmt(bar.target)}×)</text>`,
    );
  });
  out.push(
    `<text x="${LABEL_W}" y="${axisTop + bars.length * ROW * 1.5 + 14}" font-size="11" fill="#616161" ${FONT}>coloured bar: measured (green met, red not) · grey bar: the target</text>`,
  );
  return { svg: out.join("\n"), height: 60 + bars.length * ROW * 1.5 };
}

function errorPanel(bars: ErrorBar[], top: number): { svg: string; height: number } {
  const lo = 1;
  const hi = 10_000;
  const plotW = W - LABEL_W - 90;
  const out: string[] = [];
  out.push(
    `<text x="16" y="${top + 20}" font-size="16" font-weight="600" ${FONT}>Fire-time error: handler start minus fire time (ms, log scale)</text>`,
  );
  const axisTop = top + 34;
  for (const tick of [1, 10, 100, 1_000, 10_000]) {
    const x = LABEL_W + logX(tick, lo, hi, plotW);
    out.push(
      `<line x1="${x}" y1="${axisTop}" x2="${x}" y2="${axisTop + bars.length * ROW}" stroke="#e0e0e0"/>`,
    );
    out.push(
      `<text x="${x}" y="${axisTop - 3}" font-size="11" text-anchor="middle" fill="#616161" ${FONT}>${tick >= 1000 ? `${tick / 1000} s` : `${tick} ms`}</text>`,
    );
  }
  bars.forEach((bar, i) => {
    const y = axisTop + 4 + i * ROW;
    const met = bar.p99 <= bar.limit;
    const p99w = Math.max(1, logX(Math.max(bar.p99, lo), lo, hi, plotW));
    const p50w = Math.max(1, logX(Math.max(bar.p50, lo), lo, hi, plotW));
    const maxX = LABEL_W + logX(Math.max(bar.max, lo), lo, hi, plotW);
    const limitX = LABEL_W + logX(bar.limit, lo, hi, plotW);
    out.push(
      `<text x="${LABEL_W - 8}" y="${y + 13}" font-size="12" text-anchor="end" ${FONT}>${esc(bar.label)}</text>`,
    );
    out.push(
      `<rect x="${LABEL_W}" y="${y}" width="${p99w}" height="16" fill="${met ? GREEN : RED}" opacity="0.45"><title>${esc(`${bar.label}: p99 ${fmt(bar.p99)} ms (limit ${bar.limit} ms)`)}</title></rect>`,
    );
    out.push(
      `<rect x="${LABEL_W}" y="${y + 4}" width="${p50w}" height="8" fill="${met ? GREEN : RED}"/>`,
    );
    out.push(
      `<line x1="${maxX}" y1="${y}" x2="${maxX}" y2="${y + 16}" stroke="#212121" stroke-width="2"/>`,
    );
    out.push(
      `<line x1="${limitX}" y1="${y - 2}" x2="${limitX}" y2="${y + 18}" stroke="#1565c0" stroke-dasharray="3 2"/>`,
    );
    out.push(
      `<text x="${LABEL_W + plotW + 8}" y="${y + 13}" font-size="11" ${FONT}>${fmt(bar.p50)} · ${fmt(bar.p99)} · ${fmt(bar.max)}</text>`,
    );
  });
  out.push(
    `<text x="${LABEL_W}" y="${axisTop + bars.length * ROW + 18}" font-size="11" fill="#616161" ${FONT}>dark bar p50 · light bar p99 · black tick max · dashed blue line the case's p99 limit · right: p50 · p99 · max ms</text>`,
  );
  return { svg: out.join("\n"), height: 64 + bars.length * ROW };
}

/**
 * The whole picture.
 *
 * @example
 * writeFileSync("bench/results.svg", renderResultsSvg("full run, commit abc1234", ratios, errors));
 */
export function renderResultsSvg(caption: string, ratios: RatioBar[], errors: ErrorBar[]): string {
  const head = 40;
  const a = ratioPanel(ratios, head);
  const b = errorPanel(errors, head + a.height + 10);
  const height = head + a.height + 10 + b.height + 10;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="bench-title" width="${W}" height="${Math.ceil(height)}" viewBox="0 0 ${W} ${Math.ceil(height)}">`,
    `<title id="bench-title">tickwork bench: ${esc(caption)}: ratios against their targets, and fire-time error per precision case</title>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="16" y="26" font-size="18" font-weight="700" ${FONT}>tickwork bench: ${esc(caption)}</text>`,
    a.svg,
    b.svg,
    "</svg>",
    "",
  ].join("\n");
}
