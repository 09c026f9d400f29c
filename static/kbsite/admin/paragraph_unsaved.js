// The paragraphs page: every paragraph's buttons reload the page, and a reload drops typing that was not saved.
// Before any button or link leaves the page while a paragraph's text differs from the saved one, the editor is
// asked first, naming the paragraph; only that paragraph's own Save carries the typing (every other action of
// its form ignores the text field).
(() => {
  let leaving = false; // a submit this page let through (saving, or the editor said to leave): not asked again

  function unsaved(except) {
    return [...document.querySelectorAll("textarea[name=text]")].filter(
      (text) => text.value !== text.defaultValue && text.form !== except,
    );
  }

  function numbers(texts) {
    return texts.map((text) => "#" + text.closest("[data-ordinal]").dataset.ordinal).join(", ");
  }

  document.addEventListener(
    "submit",
    (event) => {
      const submitter = event.submitter;
      const saving = submitter && submitter.value === "edit" ? event.target : null;
      const lost = unsaved(saving);
      const which = lost.length === 1 ? "Paragraph " + numbers(lost) + " has" : "Paragraphs " + numbers(lost) + " have";
      if (!lost.length || window.confirm(which + " changes that are not saved. Leave them and go on?")) {
        leaving = true;
      } else {
        event.preventDefault();
        event.stopImmediatePropagation();
      }
    },
    true,
  );

  // A Save the server refused (someone else changed the paragraph meanwhile) comes back with the editor's text
  // beside the stored one: put back in the box, it is unsaved typing again (asked about before it is dropped).
  for (const text of document.querySelectorAll("textarea[name=text][data-kb-unsaved]")) {
    text.value = text.dataset.kbUnsaved;
    text.dispatchEvent(new Event("input", { bubbles: true })); // the split button follows (paragraph_split.js)
  }

  window.addEventListener("beforeunload", (event) => {
    if (leaving || !unsaved(null).length) return;
    event.preventDefault();
    event.returnValue = ""; // the browser's own "leave the page?" question
  });
})();
