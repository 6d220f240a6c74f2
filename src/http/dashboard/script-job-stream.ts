/**
 * @module
 * The dashboard script's live job detail (inlined into the IIFE of `script.ts`, sharing its
 * helpers): while a job is open and not final, the page follows `v1/jobs/:id/stream` (Server-Sent
 * Events over `fetch`, with the key as a header) and reads the detail again as soon as an update
 * arrives, instead of waiting for the next poll (which reads it too: the stream tells of its
 * status and progress, not of its log lines). A stream the server ends on time is opened again
 * from its `Last-Event-ID`, after the wait its `retry:` line asks for (within
 * {@link MIN_RECONNECT_MS} and {@link MAX_RECONNECT_MS}; 1 s when it names none); after `done`,
 * an error answer or three failures in a row only the poll reads it. The stream is read line by
 * line and only an event's `id`, its type and `retry` are kept (the detail is read again on each
 * event), so its data lines are never held whole: a line of another kind longer than
 * {@link MAX_LINE_CHARS} ends the stream as a failure.
 */

/** The shortest and longest wait before the live detail connects again, whatever `retry:` says. */
export const MIN_RECONNECT_MS = 250;
export const MAX_RECONNECT_MS = 60_000;
/** The longest `id:`, `event:` or `retry:` line the live detail reads. */
export const MAX_LINE_CHARS = 65_536;

/** The live job detail's part of the dashboard script (plain ES2020, inside the page's IIFE). */
export const JOB_STREAM_JS = `
  // ── jobs: the open job's live updates ───────────────────────────────────
  let follow = null;
  let detailTimer = 0;

  function stopFollowing() {
    if (follow) follow.abort.abort();
    follow = null;
  }
  function detailSoon() {
    if (detailTimer) return;
    detailTimer = setTimeout(() => {
      detailTimer = 0;
      loadDetail().catch(() => {});
    }, 30);
  }

  /** Resolves after ms milliseconds, or at once when the signal aborts. */
  function pause(ms, signal) {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  async function followJob(id) {
    stopFollowing();
    const me = { id, abort: new AbortController() };
    follow = me;
    const headers = { accept: "text/event-stream" };
    let failures = 0;
    let ended = false;
    let retryMs = 1000;
    for (;;) {
      // The key as it is now, on every connection: a forgotten or replaced key is not sent again.
      const key = storedKey();
      if (key) headers.authorization = "Bearer " + key; else delete headers.authorization;
      try {
        const res = await fetch(BASE + "v1/jobs/" + encodeURIComponent(id) + "/stream", {
          headers, cache: "no-store", signal: me.abort.signal,
        });
        // A refusal (401, 404): the poll shows it.
        if (!res.ok || !res.body) break;
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        // The unfinished line; a data line or comment is cut to its first characters (never read).
        let line = "";
        let event = "";
        for (;;) {
          const chunk = await reader.read();
          if (chunk.done) break;
          const text = decoder.decode(chunk.value, { stream: true });
          let from = 0;
          let end = text.indexOf("\\n");
          while (end >= 0) {
            const whole = line + text.slice(from, end);
            line = "";
            from = end + 1;
            end = text.indexOf("\\n", from);
            if (whole.length > ${MAX_LINE_CHARS} && !whole.startsWith("data:") && !whole.startsWith(":")) {
              await reader.cancel();
              throw new Error("a line over ${MAX_LINE_CHARS} characters");
            }
            if (whole === "") {
              if (event) {
                failures = 0;
                detailSoon();
                if (event === "done") ended = true;
              }
              event = "";
            } else if (whole.startsWith("id: ")) {
              headers["last-event-id"] = whole.slice(4);
            } else if (whole.startsWith("event: ")) {
              event = whole.slice(7);
            } else if (/^retry: \\d+$/.test(whole)) {
              // Digits only, as the event stream format reads it; anything else is ignored.
              retryMs = Math.min(${MAX_RECONNECT_MS}, Math.max(${MIN_RECONNECT_MS}, Number(whole.slice(7))));
            }
          }
          line += text.slice(from);
          if (line.startsWith("data:") || line.startsWith(":")) line = line.slice(0, 5);
          else if (line.length > ${MAX_LINE_CHARS}) {
            await reader.cancel();
            throw new Error("a line over ${MAX_LINE_CHARS} characters");
          }
        }
      } catch {
        if (me.abort.signal.aborted) break;
        failures++;
      }
      if (follow !== me || ended || failures >= 3) break;
      await pause(retryMs, me.abort.signal);
      if (follow !== me) break;
    }
  }
`;
