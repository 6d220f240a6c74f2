/**
 * @module
 * The dashboard script's live job detail (inlined into the IIFE of `script.ts`, sharing its
 * helpers): while a job is open and not final, the page follows `v1/jobs/:id/stream` (Server-Sent
 * Events over `fetch`, with the key as a header) and reads the detail again as soon as an update
 * arrives, instead of waiting for the next poll; the poll leaves the open job alone while the
 * stream is live. A stream the server ends on time is opened again from its `Last-Event-ID`; after
 * `done`, an error answer or three failures in a row the poll takes over again.
 */

/** The live job detail's part of the dashboard script (plain ES2020, inside the page's IIFE). */
export const JOB_STREAM_JS = `
  // ── jobs: the open job's live updates ───────────────────────────────────
  let follow = null;
  let detailTimer = 0;

  /** Whether the open job's detail is kept fresh by its stream (the poll then skips it). */
  function detailLive() {
    return Boolean(follow && follow.live && follow.id === openJob);
  }
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

  async function followJob(id) {
    stopFollowing();
    const me = { id, abort: new AbortController(), live: false };
    follow = me;
    const headers = { accept: "text/event-stream" };
    let failures = 0;
    let ended = false;
    while (follow === me && !ended && failures < 3) {
      // The key as it is now, on every connection: a forgotten or replaced key is not sent again.
      const key = storedKey();
      if (key) headers.authorization = "Bearer " + key; else delete headers.authorization;
      try {
        const res = await fetch(BASE + "v1/jobs/" + encodeURIComponent(id) + "/stream", {
          headers, cache: "no-store", signal: me.abort.signal,
        });
        // A refusal (401, 404): the poll shows it.
        if (!res.ok || !res.body) break;
        me.live = true;
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const chunk = await reader.read();
          if (chunk.done) break;
          buffer += decoder.decode(chunk.value, { stream: true });
          let end = buffer.indexOf("\\n\\n");
          while (end >= 0) {
            const lines = buffer.slice(0, end).split("\\n");
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf("\\n\\n");
            const id = lines.find((l) => l.startsWith("id: "));
            if (id) headers["last-event-id"] = id.slice(4);
            const event = lines.find((l) => l.startsWith("event: "));
            if (!event) continue;
            failures = 0;
            detailSoon();
            if (event === "event: done") ended = true;
          }
        }
      } catch {
        if (me.abort.signal.aborted) break;
        failures++;
      }
    }
    me.live = false;
  }
`;
