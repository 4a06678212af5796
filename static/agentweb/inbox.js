// The approvals inbox, live: cards are server-rendered fragments fetched when the
// /ws/approvals/ socket announces a change, inserted or swapped in place. The socket is
// live.js's (one per page, which also owns the tab title): this script follows its
// "agentweb:approvals", "agentweb:live" and "agentweb:pending" (the exact count) events.
// A card the reviewer is working in (focus inside, or text typed) is never replaced: a
// banner is added above it instead. The first page of cards comes with the page; older
// pages are fetched (`?before=` the last card's id) when the reviewer nears the end, asks
// ("Load more") or presses j on the last card. Live changes touch only the loaded range:
// a call older than the last loaded card arrives with its page. Every form also works
// without this script (the "Load more" link is then a page of its own).
(function () {
  "use strict";
  const inbox = document.getElementById("inbox");
  if (!inbox) return;
  const status = document.getElementById("live-status");
  const cardsBox = () => document.getElementById("cards");
  const queues = {};

  const cardUrl = (id) => inbox.dataset.cardUrl.replace(/0\/$/, id + "/");
  const cards = () => Array.from(document.querySelectorAll("#cards > .card"));
  const cardOf = (id) => document.getElementById("call-" + id);
  const isPending = (card) => card.dataset.status === "awaiting_approval";
  const more = () => document.getElementById("cards-more");
  const nextBefore = () => Number((more() && more().dataset.next) || 0);
  // A call is in the loaded range unless older pages are still to come and it is older
  // than the last card loaded.
  const loaded = (id) => !nextBefore() || Number(id) > nextBefore();

  function parseOne(html, selector) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content.querySelector(selector);
  }

  async function fetchCard(id) {
    const answer = await fetch(cardUrl(id), { credentials: "same-origin" });
    if (!answer.ok) return null;
    return parseOne(await answer.text(), "article.card");
  }

  function busy(card) {
    if (card.contains(document.activeElement) && document.activeElement !== card) return true;
    return Array.from(card.querySelectorAll("textarea, input:not([type=hidden])")).some(
      (field) => field.value !== field.defaultValue
    );
  }

  function markDecided(card, fresh) {
    // Keep what the reviewer typed; say what happened and stop the buttons.
    if (card.querySelector(".decided-banner")) return;
    const banner = fresh.querySelector(".decided-banner");
    if (banner) card.prepend(banner.cloneNode(true));
    card.dataset.status = fresh.dataset.status;
    card.classList.add("is-decided");
    card.querySelectorAll("button").forEach((button) => { button.disabled = true; });
  }

  function place(fresh) {
    const id = Number(fresh.dataset.call);
    const box = cardsBox();
    const empty = box.querySelector(".empty");
    if (empty) empty.remove();
    const after = cards().find((card) => Number(card.dataset.call) < id);
    box.insertBefore(fresh, after || null);
  }

  function put(fresh, userAction) {
    const current = cardOf(fresh.dataset.call);
    if (!current) {
      if (isPending(fresh) && loaded(fresh.dataset.call)) place(fresh);
    } else if (!userAction && busy(current)) {
      if (!isPending(fresh)) markDecided(current, fresh);
    } else {
      const focused = document.activeElement === current;
      current.replaceWith(fresh);
      if (focused) fresh.focus({ preventScroll: true });  // j/k go on from here
    }
    wire(fresh);
  }

  function refresh(id) {
    // One fetch at a time per card, so fragments arrive in the order events did.
    queues[id] = (queues[id] || Promise.resolve()).then(async () => {
      const fresh = await fetchCard(id);
      if (fresh) put(fresh, false);
    }).catch(() => {});
    return queues[id];
  }

  async function resync() {
    // A reconnect may have missed more than the socket replays: reload the loaded range.
    const limit = Math.min(Math.max(cards().length, 1), 200);
    const answer = await fetch(`${inbox.dataset.cardsUrl}?limit=${limit}`, { credentials: "same-origin" });
    if (!answer.ok) return;
    const list = parseOne(await answer.text(), "#cards");
    const listed = new Set();
    list.querySelectorAll(".card").forEach((fresh) => {
      listed.add(fresh.dataset.call);
      const current = cardOf(fresh.dataset.call);
      if (!current || !busy(current)) put(fresh, false);
    });
    cards().filter((card) => isPending(card) && !listed.has(card.dataset.call))
      .forEach((card) => refresh(card.dataset.call));
  }

  function reconcile(snapshot) {
    // The snapshot is the truth when the socket opens: fetch the cards the page rendered
    // before a change it then missed (a call that arrived, or was decided, meanwhile).
    const waiting = new Set((snapshot.tool_calls || []).map((call) => String(call.id)));
    waiting.forEach((id) => { if (!cardOf(id) && loaded(id)) refresh(id); });
    cards().filter((card) => isPending(card) && !waiting.has(card.dataset.call))
      .forEach((card) => refresh(card.dataset.call));
  }

  function onEvent(event) {
    if (event.type === "snapshot") { reconcile(event); return; }
    if (!String(event.type).startsWith("tool_call.")) return;
    const card = cardOf(event.tool_call);
    if (event.type === "tool_call.awaiting_approval" || (card && isPending(card))) {
      refresh(event.tool_call);
    }
  }

  function onLive(state) {
    status.textContent = state.open
      ? "Live: new calls appear here as they arrive."
      : "Live updates paused; reconnecting…";
    if (state.reconnected) resync();
  }

  // --- older pages ---------------------------------------------------------------------

  let loading = null;

  function loadMore() {
    // One page at a time; resolves true when a page was added.
    if (loading) return loading;
    const before = nextBefore();
    if (!before) return Promise.resolve(false);
    const link = more().querySelector("a");
    if (link) link.setAttribute("aria-busy", "true");
    loading = (async () => {
      const answer = await fetch(`${inbox.dataset.cardsUrl}?before=${before}`, { credentials: "same-origin" });
      if (!answer.ok) throw new Error(`the server answered ${answer.status}`);
      const template = document.createElement("template");
      template.innerHTML = await answer.text();
      const box = cardsBox();
      template.content.querySelectorAll("#cards > .card").forEach((fresh) => {
        if (cardOf(fresh.dataset.call)) return;  // placed live meanwhile
        box.appendChild(fresh);
        wire(fresh);
      });
      const following = template.content.getElementById("cards-more");
      if (following) more().replaceWith(following);
      watchEnd();
      return true;
    })().catch((error) => {
      if (link) link.removeAttribute("aria-busy");
      status.textContent = "Could not load older calls: " + error.message;
      return false;
    }).finally(() => { loading = null; });
    return loading;
  }

  let watcher = null;

  function watchEnd() {
    // Near the bottom (within about a screen), the next page is fetched by itself.
    if (!("IntersectionObserver" in window) || !more()) return;
    if (!watcher) {
      watcher = new IntersectionObserver((entries) => {
        if (entries.some((entry) => entry.isIntersecting)) loadMore();
      }, { rootMargin: "0px 0px 800px 0px" });
    }
    watcher.disconnect();
    if (nextBefore()) watcher.observe(more());
  }

  function onMoreClick(event) {
    const link = event.target.closest("#cards-more a");
    if (!link) return;
    event.preventDefault();
    loadMore();
  }

  // --- deciding by fetch -------------------------------------------------------------

  function jsonProblem(form) {
    const area = form.querySelector("textarea[data-json]");
    if (!area) return null;
    try {
      const value = JSON.parse(area.value);
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        return "The arguments must be a JSON object.";
      }
    } catch (error) {
      return "Not valid JSON: " + error.message;
    }
    return null;
  }

  function showError(card, text) {
    let box = card.querySelector(".card-error");
    if (!box) {
      box = document.createElement("p");
      box.className = "message error card-error";
      box.setAttribute("role", "alert");
      card.querySelector(".card-head").after(box);
    }
    box.textContent = text;
  }

  async function submit(event) {
    const form = event.target.closest("form.decide-form");
    if (!form) return;
    event.preventDefault();
    const card = form.closest(".card");
    const problem = jsonProblem(form);
    if (problem) {
      form.querySelector(".field-error").textContent = problem;
      form.querySelector("textarea").focus();
      return;
    }
    const body = new FormData(form);
    if (event.submitter && event.submitter.name) body.set(event.submitter.name, event.submitter.value);
    form.querySelectorAll("button").forEach((button) => { button.disabled = true; });
    // The keyboard goes back to the list at once: j/k work while the answer is on its way.
    if (card.contains(document.activeElement)) card.focus({ preventScroll: true });
    try {
      const answer = await fetch(form.getAttribute("action"), {
        method: "POST", body, credentials: "same-origin",
        headers: { "X-CSRFToken": body.get("csrfmiddlewaretoken"), "X-Requested-With": "fetch" },
      });
      const fresh = parseOne(await answer.text(), "article.card");
      if (!fresh) throw new Error(`the server answered ${answer.status}`);
      put(fresh, true);  // keeps the focus on the card if it is still there
      if (document.activeElement === document.body) fresh.focus({ preventScroll: true });
    } catch (error) {
      showError(card, "Could not send the decision: " + error.message);
      form.querySelectorAll("button").forEach((button) => { button.disabled = false; });
    }
  }

  // --- remember: count what a widened rule would match ---------------------------------

  function wire(card) {
    const form = card.querySelector(".remember-form");
    if (!form || form.dataset.wired) return;
    form.dataset.wired = "1";
    let timer = null;
    const later = () => { clearTimeout(timer); timer = setTimeout(() => count(form), 300); };
    form.addEventListener("input", later);
    form.closest("details").addEventListener("toggle", later);
  }

  async function count(form) {
    const query = new URLSearchParams();
    form.querySelectorAll("input[name^='pattern.']").forEach((input) => query.set(input.name, input.value));
    const out = form.querySelector(".remember-count");
    const answer = await fetch(`${form.dataset.countUrl}?${query}`, { credentials: "same-origin" });
    const data = await answer.json();
    // The server renders what the rule would also allow (approvals.remember_count).
    if (data.error) out.textContent = data.error;
    else out.innerHTML = data.preview;
    out.classList.toggle("error", Boolean(data.error));
  }

  // --- countdown, count, keyboard ------------------------------------------------------

  function tick() {
    document.querySelectorAll("time.countdown").forEach((time) => {
      const left = Math.round((Date.parse(time.dateTime) - Date.now()) / 1000);
      if (left <= 0) { time.textContent = "0s (expiring)"; time.classList.add("late"); return; }
      const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      time.textContent = (h ? `${h}h ` : "") + (h || m ? `${m}m ` : "") + `${s}s`;
      time.classList.toggle("soon", left < 300);
    });
  }

  function showCount(count) {
    // Every call awaiting a decision (live.js's count), not only the loaded pages'.
    document.getElementById("inbox-count").textContent = count ? `(${count})` : "";
  }

  function focusCard(card) {
    card.focus();
    card.scrollIntoView({ block: "nearest" });
  }

  function keys(event) {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
    const all = cards();
    const current = document.activeElement && document.activeElement.closest(".card");
    const index = all.indexOf(current);
    const act = {
      j: () => all[Math.min(index + 1, all.length - 1)],
      k: () => all[Math.max(index - 1, 0)],
    };
    if (event.key === "j" && all.length && index === all.length - 1 && nextBefore()) {
      loadMore().then((added) => {  // the last loaded card: j goes on into the next page
        const after = cards()[index + 1];
        if (added && after) focusCard(after);
      });
    } else if (act[event.key] && all.length) {
      focusCard(act[event.key]());
    } else if (current && event.key === "a") {
      const button = current.querySelector("button.approve:not([disabled])");
      if (button) button.click();
    } else if (current && event.key === "d") {
      const reason = current.querySelector(".deny-form input[name=reason]");
      if (reason) { event.preventDefault(); reason.focus(); }
    } else if (current && event.key === "e") {
      const panel = current.querySelector(".edit-panel");
      if (panel) { event.preventDefault(); panel.open = true; panel.querySelector("textarea").focus(); }
    }
  }

  document.addEventListener("submit", submit);
  document.addEventListener("keydown", keys);
  inbox.addEventListener("click", onMoreClick);
  cards().forEach(wire);
  watchEnd();
  tick();
  setInterval(tick, 1000);
  if (inbox.dataset.live) {  // live.js opens the socket for those who review, and only them
    document.addEventListener("agentweb:approvals", (event) => onEvent(event.detail));
    document.addEventListener("agentweb:live", (event) => onLive(event.detail));
    document.addEventListener("agentweb:pending", (event) => showCount(event.detail.count));
  }
})();
