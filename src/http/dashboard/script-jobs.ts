/**
 * @module
 * The dashboard script's jobs list (inlined into the IIFE of `script.ts`, sharing its helpers:
 * `$`, `api`, `node`, `badge`, `timeCell`, `fillTable`, `num`, `duration`, `Refused`). It lists
 * `v1/jobs` with the API's own query parameters (`status`, `handler`, `scheduleId`, `limit`, and
 * `fields`: only the members its columns show) and
 * pages with the API's `cursor` (a stack of the cursors of the pages before, for "Newer"). A
 * filter the API refuses (400) is shown in the table, as the API's `detail`. Each row's ID opens
 * the job's detail (`script-job-detail.ts`). Every value reaches the DOM as text.
 */

/**
 * The job members the list's columns show (`GET /v1/jobs?fields=`), not every job's input and
 * result: a detail reads those.
 */
export const JOB_LIST_FIELDS =
  "handler,status,cancelRequested,attempts,startedAt,finishedAt,createdAt,error";

/** The jobs list's part of the dashboard script (plain ES2020, inside the page's IIFE). */
export const JOBS_JS = `
  // ── jobs: list, filters, pages ──────────────────────────────────────────
  const JOB_PAGE = 20;
  const LIST_FIELDS = ${JSON.stringify(JOB_LIST_FIELDS)};
  /** The filters as applied, the current page's cursor and those of the pages before it. */
  const jobView = { status: "", handler: "", scheduleId: "", cursor: "", before: [], next: "" };
  let jobsSeq = 0;

  function filtered() {
    return Boolean(jobView.status || jobView.handler || jobView.scheduleId);
  }

  function jobsPath() {
    const q = new URLSearchParams({ limit: String(JOB_PAGE), fields: LIST_FIELDS });
    if (jobView.status) q.set("status", jobView.status);
    if (jobView.handler) q.set("handler", jobView.handler);
    if (jobView.scheduleId) q.set("scheduleId", jobView.scheduleId);
    if (jobView.cursor) q.set("cursor", jobView.cursor);
    return "v1/jobs?" + q.toString();
  }

  /** Reads the current page; a 401 is rethrown (the key form), any other refusal shown in place. */
  async function loadJobs() {
    const seq = ++jobsSeq;
    let page;
    try {
      page = await api("GET", jobsPath());
    } catch (error) {
      if (error instanceof Refused) throw error;
      if (seq !== jobsSeq) return;
      jobView.next = "";
      fillTable($("jobs"), [], 7, "Could not list jobs: " + error.message);
      $("jobs").querySelector("td").className = "error";
      renderPager();
      return;
    }
    // A later read (a new filter, another page) has been asked for: this answer is stale.
    if (seq !== jobsSeq) return;
    jobView.next = page.cursor || "";
    renderJobs(page.items);
    renderPager();
  }

  function renderJobs(items) {
    fillTable($("jobs"), items.map((j) => {
      const status = node("td");
      status.append(badge(j.status));
      if (j.cancelRequested) status.append(" ", node("span", "cancel requested", "unit"));
      const took = j.startedAt && j.finishedAt ? duration(Date.parse(j.finishedAt) - Date.parse(j.startedAt)) : "–";
      const id = node("td", null, "id");
      const show = node("button", j.id, "link");
      show.type = "button";
      show.setAttribute("aria-label", "Show job " + j.id);
      show.addEventListener("click", () => showJob(j.id));
      id.append(show);
      return [id, node("td", j.handler), status, node("td", num(j.attempts), "num"),
        node("td", took, "num"), node("td", errorText(j.error), "error"),
        timeCell(j.finishedAt || j.startedAt || j.createdAt)];
    }), 7, filtered() ? "No jobs match these filters." : "No jobs yet.");
    markOpenJob();
  }

  function renderPager() {
    $("jobs-newer").disabled = jobView.before.length === 0;
    $("jobs-older").disabled = !jobView.next;
    $("jobs-page").textContent = "page " + (jobView.before.length + 1);
  }

  /** Shows the first page of what the filters ask for. */
  function applyFilters() {
    jobView.status = $("f-status").value;
    jobView.handler = $("f-handler").value.trim();
    jobView.scheduleId = $("f-schedule").value.trim();
    jobView.cursor = "";
    jobView.before = [];
    jobView.next = "";
    $("jobs-filter-state").textContent = filtered() ? describeFilters() : "";
    return loadJobs().catch(() => {});
  }

  function describeFilters() {
    const parts = [];
    if (jobView.status) parts.push("status " + jobView.status);
    if (jobView.handler) parts.push("handler " + jobView.handler);
    if (jobView.scheduleId) parts.push("schedule " + jobView.scheduleId);
    return "filtered: " + parts.join(", ");
  }

  $("job-filters").addEventListener("submit", (event) => {
    event.preventDefault();
    applyFilters();
  });
  $("f-status").addEventListener("change", () => applyFilters());
  $("f-clear").addEventListener("click", () => {
    $("f-status").value = "";
    $("f-handler").value = "";
    $("f-schedule").value = "";
    applyFilters();
  });
  $("jobs-older").addEventListener("click", () => {
    if (!jobView.next) return;
    jobView.before.push(jobView.cursor);
    jobView.cursor = jobView.next;
    loadJobs().catch(() => {});
  });
  $("jobs-newer").addEventListener("click", () => {
    if (jobView.before.length === 0) return;
    jobView.cursor = jobView.before.pop();
    loadJobs().catch(() => {});
  });
`;
