// The Connect page's "Test the connection": GET /api/hooks/check with the new token, as
// the agent's hook would send it, and show each check the server ran (a dry run: no call
// is made). Text only (textContent): nothing the server says is read as HTML.
(function () {
  "use strict";

  const section = document.getElementById("connection-check");
  const button = document.getElementById("check-connection");
  if (!section || !button || !("fetch" in window)) return;
  const summary = document.getElementById("check-summary");
  const list = document.getElementById("check-results");

  function item(ok, name, detail) {
    const li = document.createElement("li");
    li.className = "check " + (ok ? "check-ok" : "check-failed");
    const badge = document.createElement("span");
    badge.className = "status " + (ok ? "status-succeeded" : "status-failed");
    badge.textContent = ok ? "passed" : "failed";
    const label = document.createElement("strong");
    label.textContent = " " + name;
    li.append(badge, label, document.createTextNode(detail ? ": " + detail : ""));
    return li;
  }

  function show(ok, text, checks) {
    summary.textContent = text;
    summary.className = "message" + (ok ? "" : " error");
    list.replaceChildren(...checks.map((c) => item(Boolean(c.ok), String(c.name), String(c.detail || ""))));
  }

  async function check() {
    button.disabled = true;
    summary.className = "";
    summary.textContent = "Testing…";
    list.replaceChildren();
    try {
      const answer = await fetch(section.dataset.checkUrl, {
        headers: { Authorization: "Bearer " + section.dataset.token, Accept: "application/json" },
        credentials: "omit",
        cache: "no-store",
      });
      const body = await answer.json().catch(() => ({}));
      if (!answer.ok) {
        show(false, "The connection failed (" + answer.status + "): " + (body.detail || answer.statusText), []);
      } else {
        const checks = Array.isArray(body.checks) ? body.checks : [];
        const who = "as " + body.user + ", policy " + body.policy + ", agentweb " + body.server_version;
        show(Boolean(body.ok), (body.ok ? "The connection works " : "The connection has problems ") + who + ".", checks);
      }
    } catch (error) {
      show(false, "agentweb did not answer: " + error, []);
    } finally {
      button.disabled = false;
    }
  }

  button.addEventListener("click", check);
})();
