// A collection's page refreshes its re-index progress (documents done / total) while a re-index is pending:
// it asks the status view and replaces the progress cell in place (no reload: a half-typed form stays as it
// is), and stops once the cutover happened or the run stopped.
(function () {
  "use strict";
  var script = document.currentScript;
  var url = script.dataset.statusUrl;
  var every = Number(script.dataset.every || 2000);

  function pending() {
    return document.querySelector('[data-kb-reindex][data-kb-pending="1"]');
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        var cells = document.querySelectorAll("[data-kb-reindex]");
        Array.prototype.forEach.call(cells, function (cell) { cell.outerHTML = data.html; });
      })
      .catch(function () { /* a missed beat: the next one tries again */ })
      .then(function () { if (pending()) { window.setTimeout(poll, every); } });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (pending()) { window.setTimeout(poll, every); }
  });
})();
