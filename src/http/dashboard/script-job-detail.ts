/**
 * @module
 * The dashboard script's job detail (inlined into the IIFE of `script.ts`, sharing its helpers).
 * A job's ID in the list opens it: `v1/jobs/:id` (status, attempts, progress with its time,
 * dependencies `after` and `onFailure`, `cancelRequested`, times, input, result, error) and its
 * log, `v1/jobs/:id/logs` (oldest first, every page the API gives), then its events,
 * `v1/events?jobId=` (`script-job-events.ts`, with its placement, node and refusal). All are read
 * again on every poll while the panel is open (the events from where the last read stopped).
 * JSON values are shown with `JSON.stringify` through `textContent`: never as markup.
 */

/** The job detail's part of the dashboard script (plain ES2020, inside the page's IIFE). */
export const JOB_DETAIL_JS = `
  // ── jobs: one job's detail and log ──────────────────────────────────────
  const LOG_PAGES = 5;
  let openJob = "";
  let detailSeq = 0;

  // A value's JSON as the detail shows it: indented, or past SHOWN_CHARS on one line and cut
  // there (a 600 KB result, indented and laid out again on every poll, blocked the page for 2 s
  // of every 3). The API has it whole.
  const SHOWN_CHARS = 65536;
  function json(value, id) {
    if (value === undefined) return "–";
    let text;
    try { text = JSON.stringify(value); } catch { return String(value); }
    if (text === undefined) return String(value);
    if (text.length <= SHOWN_CHARS) return JSON.stringify(value, null, 2);
    return text.slice(0, SHOWN_CHARS) + "\\n… " + num(text.length - SHOWN_CHARS) +
      " more characters: GET v1/jobs/" + encodeURIComponent(id) + " has it whole";
  }
  // Written only when it changed: a poll that brings the same job lays nothing out again.
  function showText(element, text) {
    if (element.textContent !== text) element.textContent = text;
  }
  function compact(value) {
    try { return JSON.stringify(value); } catch { return String(value); }
  }
  function when(iso) {
    const span = node("span", iso ? relative(iso) : "–");
    if (iso) span.title = iso;
    return span;
  }

  function markOpenJob() {
    for (const tr of $("jobs").querySelectorAll("tr")) {
      const b = tr.querySelector("button.link");
      const open = Boolean(b && openJob && b.textContent === openJob);
      tr.classList.toggle("selected", open);
      if (open) tr.setAttribute("aria-current", "true"); else tr.removeAttribute("aria-current");
    }
  }

  function showJob(id) {
    openJob = id;
    $("job-id").textContent = id;
    $("job-detail").hidden = false;
    $("job-problem").hidden = true;
    $("job-fields").replaceChildren();
    $("job-logs").replaceChildren();
    $("job-events").replaceChildren();
    $("job-events-state").hidden = true;
    for (const box of ["job-input", "job-result", "job-error"]) $(box).textContent = "";
    $("job-result-box").hidden = true;
    $("job-error-box").hidden = true;
    markOpenJob();
    $("job-detail").scrollIntoView({ block: "nearest" });
    followJob(id);
    return loadDetail().catch(() => {});
  }

  function closeJob() {
    openJob = "";
    detailSeq++;
    stopFollowing();
    $("job-detail").hidden = true;
    markOpenJob();
  }

  async function readLogs(id) {
    const items = [];
    let cursor = "";
    for (let i = 0; i < LOG_PAGES; i++) {
      const page = await api("GET", "v1/jobs/" + encodeURIComponent(id) + "/logs?limit=100" +
        (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
      items.push(...page.items);
      if (!page.cursor) break;
      cursor = page.cursor;
    }
    return items;
  }

  /** Reads the open job and its log; a 401 is rethrown (the key form), other refusals shown. */
  async function loadDetail() {
    if (!openJob) return;
    const id = openJob;
    const seq = ++detailSeq;
    let job;
    let logs;
    let events;
    try {
      [job, logs] = await Promise.all([api("GET", "v1/jobs/" + encodeURIComponent(id)), readLogs(id)]);
      // Its events start from its creation time (the job's own fields), so they come after it.
      if (seq === detailSeq && openJob === id) events = await readJobEvents(job);
    } catch (error) {
      if (error instanceof Refused) throw error;
      if (seq !== detailSeq || openJob !== id) return;
      $("job-problem").textContent = "Could not read job " + id + ": " + error.message;
      $("job-problem").hidden = false;
      return;
    }
    if (seq !== detailSeq || openJob !== id) return;
    $("job-problem").hidden = true;
    renderDetail(job, logs);
    renderJobEvents(events);
  }

  function renderDetail(j, logs) {
    const status = node("span");
    status.append(badge(j.status));
    const progress = node("span", null, "progress");
    if (j.progress) {
      progress.append(node("span", iso(compact(j.progress.value)), "value"), " ", node("span", "at ", "unit"));
      const at = when(j.progress.at);
      at.className = "unit";
      progress.append(at);
    } else {
      progress.textContent = "none reported";
    }
    const after = node("span");
    if (j.after && j.after.length > 0) {
      for (const dep of j.after) {
        const b = node("button", dep, "link");
        b.type = "button";
        b.setAttribute("aria-label", "Show job " + dep);
        b.addEventListener("click", () => showJob(dep));
        if (after.childNodes.length > 0) after.append(", ");
        after.append(b);
      }
    } else {
      after.textContent = "none";
    }
    const pairs = [
      ["Status", status],
      ["Cancel requested", j.cancelRequested ? "yes" : "no"],
      ["Handler", j.handler],
      ["Attempts", num(j.attempts) + (Number.isFinite(j.retries) ? " (up to " + num(j.retries + 1) + ")" : "")],
      ["Progress", progress],
      ["After", after],
    ];
    if (j.after) pairs.push(["On failure", j.onFailure || "cancel"]);
    pairs.push(...placementPairs(j));
    if (j.scheduleId !== undefined) pairs.push(["Schedule", j.scheduleId]);
    if (j.fireAt) pairs.push(["Fire time", when(j.fireAt)]);
    pairs.push(
      ["Priority", num(j.priority)],
      ["Tags", j.tags && j.tags.length ? j.tags.map(iso).join(", ") : "–"],
      ["Timeout", duration(j.timeout)],
      ["Run at", when(j.runAt)],
      ["Created", when(j.createdAt)],
      ["Started", when(j.startedAt)],
      ["Finished", when(j.finishedAt)],
    );
    if (j.startedAt && j.finishedAt) pairs.push(["Took", duration(Date.parse(j.finishedAt) - Date.parse(j.startedAt))]);
    if (j.idempotencyKey !== undefined) pairs.push(["Idempotency key", j.idempotencyKey]);
    fillList($("job-fields"), pairs);

    showText($("job-input"), json(j.input, j.id));
    $("job-result-box").hidden = !("result" in j);
    showText($("job-result"), "result" in j ? json(j.result, j.id) : "");
    $("job-error-box").hidden = !j.error;
    showText($("job-error"), errorText(j.error));

    fillTable($("job-logs"), logs.map((e) => [
      timeCell(e.at), node("td", num(e.attempt), "num"), node("td", e.level, "level l-" + String(e.level).replace(/[^a-z]/g, "")),
      node("td", e.message, "message"), node("td", e.fields === undefined ? "" : compact(e.fields), "fields"),
    ]), 5, "Nothing logged.");
  }

  $("job-close").addEventListener("click", closeJob);
`;
