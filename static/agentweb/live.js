// Every page: the phone menu, the live pending-approvals counter (header and tab title),
// and opt-in browser notifications when a call arrives while the tab is hidden.
//
// This is the page's one client of /ws/approvals/ and the one writer of the tab title: a
// snapshot of the calls awaiting a decision, then every tool_call.* event with a `seq`;
// after a dropped connection it reconnects (backoff with jitter) with ?last_seq= and gets
// exactly what it missed, each `seq` once. Pages follow the same socket instead of opening
// their own: each event is dispatched on `document` as "agentweb:approvals" (detail: the
// event), the connection's state as "agentweb:live" (detail: {open, reconnected}) and
// the number of calls awaiting a decision as "agentweb:pending" (detail: {count}).
(function () {
  "use strict";

  const menu = document.querySelector(".menu-toggle");
  const nav = document.getElementById("site-nav");
  if (menu && nav) {
    menu.addEventListener("click", function () {
      const open = nav.classList.toggle("open");
      menu.setAttribute("aria-expanded", String(open));
    });
  }

  const socketPath = document.body.dataset.approvalsSocket;
  if (!socketPath || !("WebSocket" in window)) return;

  const NOTIFY_KEY = "agentweb.notifications";
  const inboxUrl = document.body.dataset.inboxUrl || "/approvals/";
  const badge = document.getElementById("pending-count");
  const baseTitle = document.title.replace(/^\(\d+\) /, "");
  const waiting = new Set();
  let lastSeq = null;
  let retry = 1000;
  let opened = 0;

  function render() {
    const count = waiting.size;
    document.title = (count ? "(" + count + ") " : "") + baseTitle;
    document.dispatchEvent(new CustomEvent("agentweb:pending", { detail: { count: count } }));
    if (!badge) return;
    badge.dataset.count = String(count);
    badge.querySelector(".count").textContent = String(count);
  }

  function notificationsOn() {
    return "Notification" in window && Notification.permission === "granted" &&
      localStorage.getItem(NOTIFY_KEY) === "on";
  }

  // The characters rendering.py marks on pages (bidi, zero-width, controls), spelled
  // <U+202E> in a notification, which shows no markup.
  const HIDDEN = /[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060-\u2064\ufeff\u061c\u00ad\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
  function spelled(text) {
    return String(text).replace(HIDDEN, function (c) {
      return "<U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + ">";
    });
  }

  function notify(event) {
    if (!document.hidden || !notificationsOn()) return;
    const note = new Notification("Approval needed: " + spelled(event.tool), {
      body: spelled(event.reason || "A tool call awaits your decision.").slice(0, 200),
      tag: "agentweb-call-" + event.tool_call,
    });
    note.onclick = function () { window.focus(); location.href = inboxUrl; note.close(); };
  }

  function apply(event) {
    if (event.type === "snapshot") {
      waiting.clear();
      (event.tool_calls || []).forEach(function (call) { waiting.add(call.id); });
    } else if (event.type === "tool_call.awaiting_approval") {
      if (!waiting.has(event.tool_call)) notify(event);
      waiting.add(event.tool_call);
    } else if (typeof event.type === "string" && event.type.startsWith("tool_call.")) {
      waiting.delete(event.tool_call);
    }
    render();
    document.dispatchEvent(new CustomEvent("agentweb:approvals", { detail: event }));
  }

  function announce(open) {
    const detail = { open: open, reconnected: open && opened > 1 };
    document.dispatchEvent(new CustomEvent("agentweb:live", { detail: detail }));
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = lastSeq === null ? "" : "?last_seq=" + lastSeq;
    const socket = new WebSocket(scheme + "://" + location.host + socketPath + query);
    socket.onopen = function () { retry = 1000; opened += 1; announce(true); };
    socket.onmessage = function (message) {
      const event = JSON.parse(message.data);
      if (typeof event.seq === "number" && lastSeq !== null && event.seq <= lastSeq &&
          event.type !== "snapshot") return;  // already counted
      if (typeof event.seq === "number") lastSeq = event.seq;
      apply(event);
    };
    socket.onclose = function () {
      announce(false);
      // Jitter, so that the tabs a server restart dropped do not all come back at once.
      setTimeout(connect, retry * (0.5 + Math.random() / 2));
      retry = Math.min(retry * 2, 30000);
    };
  }

  function setUpNotifyButton() {
    const button = document.getElementById("notify-toggle");
    if (!button || !("Notification" in window) || Notification.permission === "denied") return;
    function label() {
      button.textContent = notificationsOn() ? "Notifications on" : "Notify me";
      button.setAttribute("aria-pressed", String(notificationsOn()));
    }
    button.hidden = false;
    label();
    button.addEventListener("click", function () {
      if (notificationsOn()) {
        localStorage.setItem(NOTIFY_KEY, "off");
        label();
        return;
      }
      Notification.requestPermission().then(function (permission) {
        localStorage.setItem(NOTIFY_KEY, permission === "granted" ? "on" : "off");
        label();
      });
    });
  }

  setUpNotifyButton();
  connect();
})();
