// docsbot's pages: progressive enhancement only (every page works without it). Served from /static; the pages'
// Content-Security-Policy allows no inline script, so behaviour is keyed by ids and data- attributes.
(function () {
  "use strict";

  // "/" puts the focus in the search box from anywhere on the page.
  document.addEventListener("keydown", function (e) {
    var box = document.getElementById("q");
    if (box && e.key === "/" && document.activeElement !== box &&
        !/^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName)) {
      e.preventDefault(); box.focus(); box.select();
    }
  });

  // A form with data-confirm asks first (Remove): the message is text from an attribute, never code.
  document.addEventListener("submit", function (e) {
    var message = e.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) { e.preventDefault(); }
  });

  // Follow a page's JSON twin every `ms` while `step(answer)` returns true (a network error just tries again).
  function follow(ms, step) {
    (function poll() {
      setTimeout(function () {
        fetch(location.pathname + ".json", {headers: {"Accept": "application/json"}})
          .then(function (r) { return r.json(); })
          .then(function (answer) { if (step(answer)) { poll(); } })
          .catch(function () { poll(); });
      }, ms);
    })();
  }

  function setText(id, text) {
    var node = document.getElementById(id);
    if (node && text !== undefined && text !== null) { node.textContent = text; }
  }

  // A run in progress, or its version's vectors being embedded, follows its JSON twin; the page reloads once the
  // run's state changes (the counts and changes come with the end), and stops following once the vectors are in.
  var run = document.getElementById("run");
  if (run && run.getAttribute("data-live") === "yes") {
    var shown = run.getAttribute("data-state");
    follow(1500, function (state) {
      if (state.state !== shown) { location.reload(); return false; }
      if (state.progress) {
        setText("progress", state.progress.pages_written + " pages written in " + state.progress.elapsed_seconds + " s");
      }
      var vectors = state.vectors;
      if (vectors) {
        setText("vectors", vectors.text);
        var node = document.getElementById("vectors");
        node.setAttribute("data-done", vectors.done);
        node.setAttribute("data-waiting", vectors.waiting);
      }
      var running = state.state === "starting" || state.state === "running";
      var more = running || (vectors && vectors.waiting > 0 && vectors.workers > 0);
      if (!more) { run.setAttribute("data-live", "no"); }
      return more;
    });
  }

  // The libraries page while a run or an embedding worker is at work: each version's vectors as they come in, then
  // one reload when all is done (its counts and last run).
  var libraries = document.getElementById("libraries");
  if (libraries && libraries.getAttribute("data-live") === "yes") {
    follow(3000, function (answer) {
      var busy = false;
      (answer.libraries || []).forEach(function (v, i) {
        var node = document.querySelector('[data-vectors="' + i + '"]');
        if (node && v.vectors_progress) { node.textContent = v.vectors_progress.text; }
        busy = busy || v.refreshing || !!v.embedding;
      });
      if (!busy) { location.reload(); }
      return busy;
    });
  }
})();
