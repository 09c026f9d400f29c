// An export started from the collection list is followed where its message stands: each pending export asks its
// status view and is replaced in place, until its download link (or why it failed) is shown. No reload.
(function () {
  "use strict";
  var every = Number(document.currentScript.dataset.every || 1500);

  function pending() {
    return document.querySelectorAll('[data-kb-export][data-kb-pending="1"]');
  }

  function poll() {
    var asked = Array.prototype.map.call(pending(), function (cell) {
      return fetch(cell.dataset.kbStatusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (data) { if (data) { cell.outerHTML = data.html; } })
        .catch(function () { /* a missed beat: the next one tries again */ });
    });
    Promise.all(asked).then(function () { if (pending().length) { window.setTimeout(poll, every); } });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (pending().length) { window.setTimeout(poll, every); }
  });
})();
