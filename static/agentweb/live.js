// Every page: the phone menu, the live pending-approvals counter (header and tab title),
// and opt-in browser notifications when a call arrives while the tab is hidden.
//
// This is the page's one live client: `agentwebLive.follow(path, handlers)` opens one
// socket per path however many follow it, reconnects after a drop (backoff with jitter)
// with ?last_seq= and hands on each `seq` once. live.js follows /ws/approvals/ itself and
// is the one writer of the tab title: a snapshot of the calls awaiting a decision, then
// every tool_call.* event. Pages follow the same socket instead of opening their own:
// each event is dispatched on `document` as "agentweb:approvals" (detail: the event),
// the connection's state as "agentweb:live" (detail: {open, reconnected}) and the number
// of calls awaiting a decision as "agentweb:pending" (detail: {count}). The session page
// follows its /ws/sessions/<id>/ through `follow` too.
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

  // --- one socket per path: reconnect, backoff with jitter, each seq once -------------

  const streams = {};

  // handlers: {lastSeq (the seq the page was rendered at, or null for a snapshot first),
  // event(event), state({open, reconnected})}. Returns {seen(seq)}: a page that learnt a
  // newer seq another way (a fetched fragment) says so, and a reconnect asks from there.
  function follow(path, handlers) {
    if (!("WebSocket" in window)) return { seen: function () {} };
    let stream = streams[path];
    if (!stream) {
      stream = streams[path] = { path: path, lastSeq: null, retry: 1000, opened: 0, handlers: [] };
      if (typeof handlers.lastSeq === "number") stream.lastSeq = handlers.lastSeq;
      connect(stream);
    }
    stream.handlers.push(handlers);
    return { seen: function (seq) { stream.lastSeq = Math.max(stream.lastSeq || 0, seq); } };
  }

  function tell(stream, name, value) {
    stream.handlers.forEach(function (handlers) { if (handlers[name]) handlers[name](value); });
  }

  function connect(stream) {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = stream.lastSeq === null ? "" : "?last_seq=" + stream.lastSeq;
    const socket = new WebSocket(scheme + "://" + location.host + stream.path + query);
    socket.onopen = function () {
      stream.retry = 1000;
      stream.opened += 1;
      tell(stream, "state", { open: true, reconnected: stream.opened > 1 });
    };
    socket.onmessage = function (message) {
      const event = JSON.parse(message.data);
      const numbered = typeof event.seq === "number";
      if (event.type === "snapshot") {
        if (numbered) stream.lastSeq = event.seq;
      } else if (numbered) {
        if (stream.lastSeq !== null && event.seq <= stream.lastSeq) return;  // already had
        stream.lastSeq = event.seq;
      }
      tell(stream, "event", event);
    };
    socket.onclose = function () {
      tell(stream, "state", { open: false, reconnected: false });
      // Jitter, so that the tabs a server restart dropped do not all come back at once.
      setTimeout(function () { connect(stream); }, stream.retry * (0.5 + Math.random() / 2));
      stream.retry = Math.min(stream.retry * 2, 30000);
    };
  }

  window.agentwebLive = { follow: follow };

  // --- the approvals counter, the tab title, notifications ----------------------------

  const socketPath = document.body.dataset.approvalsSocket;
  if (!socketPath || !("WebSocket" in window)) return;

  const NOTIFY_KEY = "agentweb.notifications";
  const inboxUrl = document.body.dataset.inboxUrl || "/approvals/";
  const badge = document.getElementById("pending-count");
  const baseTitle = document.title.replace(/^\(\d+\) /, "");
  const waiting = new Set();

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

  function announce(state) {
    document.dispatchEvent(new CustomEvent("agentweb:live", { detail: state }));
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
  follow(socketPath, { lastSeq: null, event: apply, state: announce });
})();
