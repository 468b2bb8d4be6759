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
