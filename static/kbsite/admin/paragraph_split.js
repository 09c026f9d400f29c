// The paragraphs page: "Split at the cursor" sends where the cursor stands in the paragraph's text.
// A paragraph whose text was changed and not saved is saved first (the split cuts the stored text).
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-kb-split]");
  if (!button) return;
  const form = button.form;
  const text = form.querySelector("textarea[name=text]");
  if (text.value !== text.defaultValue) {
    event.preventDefault();
    window.alert("Save the paragraph's new text first: a split cuts the saved text.");
    return;
  }
  form.querySelector("input[name=at]").value = String(text.selectionStart);
});
