// The session page: follow /ws/sessions/<id>/ through live.js's one live client (its
// socket, reconnect and `seq` de-duplication), from the `seq` the page was rendered at,
// and on each event fetch the server-rendered live part again and swap it in place,
// keeping the scroll position, the open <details> and the focus. A gap in `seq` needs
// nothing more: the fragment is the whole state, so fetching it fills whatever was missed.
(function () {
  "use strict";

  const live = document.getElementById("session-live");
  const status = document.getElementById("live-status");
  if (!live || !window.agentwebLive || !("fetch" in window)) return;

  let timer = null;
  let fetching = false;
  let again = false;
  let stream = null;

  function openDetails() {
    return new Set(Array.from(live.querySelectorAll("details[open][id]"), (d) => d.id));
  }

  function swap(html) {
    const opened = openDetails();
    const focused = document.activeElement && live.contains(document.activeElement) ?
      document.activeElement.id : "";
    const x = window.scrollX, y = window.scrollY;
    const template = document.createElement("template");
    template.innerHTML = html;
    const part = template.content.querySelector(".session-live");
    if (!part) return;
    stream.seen(Number(part.dataset.seq || 0));
    live.replaceChildren(template.content);
    opened.forEach(function (id) {
      const details = document.getElementById(id);
      if (details && details.tagName === "DETAILS") details.open = true;
    });
    if (focused) {
      const again = document.getElementById(focused);
      if (again) again.focus({ preventScroll: true });
    }
    window.scrollTo(x, y);
  }

  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const answer = await fetch(live.dataset.fragmentUrl, {
        credentials: "same-origin", headers: { "Accept": "text/html" },
      });
      if (answer.status === 404 || answer.redirected) { location.reload(); return; }
      if (answer.ok) swap(await answer.text());
    } finally {
      fetching = false;
      if (again) { again = false; schedule(); }
    }
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 150);  // a burst of events becomes one fetch
  }

  function state(now) {
    status.textContent = now.open ? "Live: updates appear as they happen." :
      "Live updates paused; reconnecting…";
    if (now.reconnected) schedule();  // a fetch that failed while offline is made good
  }

  stream = window.agentwebLive.follow(live.dataset.socket, {
    lastSeq: Number(live.dataset.seq || 0), event: schedule, state: state,
  });
})();
