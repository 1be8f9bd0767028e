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

  // A run in progress follows its JSON twin and reloads once it ends.
  var run = document.getElementById("run");
  if (run && run.getAttribute("data-live") === "yes") {
    (function poll() {
      setTimeout(function () {
        fetch(location.pathname + ".json", {headers: {"Accept": "application/json"}})
          .then(function (r) { return r.json(); })
          .then(function (state) {
            if (state.state === "starting" || state.state === "running") {
              document.getElementById("state").textContent = state.state;
              if (state.progress) {
                document.getElementById("progress").textContent =
                  state.progress.pages_written + " pages written in " + state.progress.elapsed_seconds + " s";
              }
              poll();
            } else { location.reload(); }
          })
          .catch(function () { poll(); });
      }, 1500);
    })();
  }
})();
