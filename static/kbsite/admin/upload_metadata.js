// The upload form shows a field per metadata column of the collection it was opened for: choosing another
// collection reloads the page with that collection's fields, while no file is chosen yet (a reload would drop
// the chosen files; the JSON field takes values for any column meanwhile).
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var select = document.getElementById("id_collection");
    var files = document.getElementById("id_upload");
    if (!select || !files) return;
    select.addEventListener("change", function () {
      if (files.files.length || !select.value) return;
      var url = new URL(window.location.href);
      url.searchParams.delete("_changelist_filters");
      url.searchParams.set("collection", select.value);
      window.location.assign(url.toString());
    });
  });
})();
