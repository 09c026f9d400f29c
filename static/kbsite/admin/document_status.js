// The document list refreshes its own status, progress, error and paragraph cells while any document is
// queued or parsing: it asks the status view for those rows only and replaces their cells in place (no
// page reload, no flicker), and stops once none is in flight.
(function () {
  "use strict";
  var script = document.currentScript;
  var url = script.dataset.statusUrl;
  var every = Number(script.dataset.every || 2000);

  function inFlight() {
    return Array.prototype.slice.call(document.querySelectorAll('[data-kb-field="status"][data-kb-in-flight="1"]'));
  }

  function replace(id, fields) {
    Object.keys(fields).forEach(function (field) {
      var cells = document.querySelectorAll('[data-kb-doc="' + id + '"][data-kb-field="' + field + '"]');
      Array.prototype.forEach.call(cells, function (cell) { cell.outerHTML = fields[field]; });
    });
  }

  function poll() {
    var ids = inFlight().map(function (cell) { return cell.dataset.kbDoc; });
    if (!ids.length) { return; }
    var query = ids.map(function (id) { return "id=" + encodeURIComponent(id); }).join("&");
    fetch(url + "?" + query, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : { documents: {} }; })
      .then(function (data) {
        Object.keys(data.documents).forEach(function (id) { replace(id, data.documents[id]); });
      })
      .catch(function () { /* a missed beat: the next one tries again */ })
      .then(function () { if (inFlight().length) { window.setTimeout(poll, every); } });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (inFlight().length) { window.setTimeout(poll, every); }
  });
})();
