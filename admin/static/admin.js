// superagent admin: optional conveniences. Every page works without this.
(function () {
  "use strict";

  // Bring a refused save's problem summary into view and focus.
  var problems = document.getElementById("problems");
  if (problems) { problems.focus(); }

  // "Edit" on a Default-updated part moves the keyboard focus to the editor.
  document.querySelectorAll("[data-focus]").forEach(function (a) {
    a.addEventListener("click", function (ev) {
      var target = document.getElementById(a.getAttribute("data-focus"));
      if (!target) { return; }
      ev.preventDefault();
      target.scrollIntoView({ block: "center" });
      target.focus();
    });
  });

  // Warn before leaving a page whose editor has changes nobody submitted.
  document.querySelectorAll("form[data-unsaved-warning]").forEach(function (form) {
    var dirty = false;
    form.addEventListener("input", function () { dirty = true; });
    form.addEventListener("submit", function () { dirty = false; });
    window.addEventListener("beforeunload", function (ev) {
      if (dirty) { ev.preventDefault(); ev.returnValue = ""; }
    });
  });
})();

// The live Ticket page: follow the Ticket's server-sent events and update
// its state, step, use and transcript in place. Without this script (or
// when the stream is refused) the page shows what it had when loaded.
(function () {
  "use strict";
  var live = document.querySelector("[data-events]");
  if (!live || !window.EventSource) { return; }
  var url = live.getAttribute("data-events") + "?after=" + encodeURIComponent(live.getAttribute("data-cursor") || "0");
  var status = live.querySelector('[data-live="status"]');
  var list = live.querySelector('[data-live="entries"]');
  function set(name, text) {
    document.querySelectorAll('[data-live="' + name + '"]').forEach(function (el) { el.textContent = text || ""; });
  }
  function entry(e) {
    var li = document.createElement("li");
    li.className = "fresh";
    li.setAttribute("data-id", String(e.id));
    var role = document.createElement("div");
    role.className = "role";
    role.textContent = e.role + " · " + e.when;
    li.appendChild(role);
    if (e.content) {
      var pre = document.createElement("pre");
      pre.textContent = e.content;
      li.appendChild(pre);
    }
    (e.calls || []).forEach(function (c) {
      var div = document.createElement("div");
      var code = document.createElement("code");
      code.textContent = c;
      div.appendChild(document.createTextNode("→ "));
      div.appendChild(code);
      li.appendChild(div);
    });
    return li;
  }
  var source = new EventSource(url);
  source.addEventListener("open", function () {
    status.textContent = "live";
    status.setAttribute("data-state", "live");
  });
  source.addEventListener("update", function (ev) {
    var d = JSON.parse(ev.data);
    var s = d.state;
    set("state-text", s.state);
    set("hold", s.hold);
    set("step", s.step || "none yet");
    set("step-note", s.step_note);
    set("session", s.session);
    set("usage", s.usage);
    document.querySelectorAll("h1 .state").forEach(function (el) {
      el.textContent = s.state;
      el.className = "state state-" + s.state;
    });
    var empty = list.querySelector("[data-empty]");
    if (empty && d.entries.length) { empty.remove(); }
    // Entries arrive newest first; each goes above the ones before it.
    for (var i = d.entries.length - 1; i >= 0; i--) {
      if (!list.querySelector('[data-id="' + d.entries[i].id + '"]')) {
        list.insertBefore(entry(d.entries[i]), list.firstChild);
      }
    }
  });
  source.addEventListener("bye", function (ev) {
    source.close();
    var why = {};
    try { why = JSON.parse(ev.data); } catch (e) { /* an older server sent {} */ }
    status.textContent = why.reason === "session" ? "your session ended; sign in again for news" : "the server restarted; reload for news";
    status.removeAttribute("data-state");
  });
  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED) {
      status.textContent = "not live; reload for news";
      status.removeAttribute("data-state");
    } else {
      status.textContent = "reconnecting…";
    }
  });
})();
