// The paragraphs page: "Split at the cursor" sends where the cursor stands in the paragraph's text. It is
// enabled only while the cursor stands in the text with text on both sides of it; until then a hint says to
// click there. A paragraph whose text was changed and not saved cannot be split until it is saved (the split
// cuts the stored text), and the hint says so.
(() => {
  const HINT = "Click in the text where it should split";
  const CLICK_HINT = "(click in the paragraph where it should split)";
  const SAVE_HINT = "(save your change first: a split cuts the saved text)";

  function splitsAt(text) {
    const at = text.selectionStart;
    const value = text.defaultValue;
    return at > 0 && at < value.length && value.slice(0, at).trim() && value.slice(at).trim() ? at : null;
  }

  function update(text) {
    const button = text.form && text.form.querySelector("button[data-kb-split]");
    if (!button) return;
    // Never focused, its cursor is nowhere an editor put it; once clicked it stays where it was left.
    if (document.activeElement === text) text.dataset.kbTouched = "1";
    const ready = text.dataset.kbTouched === "1" && text.value === text.defaultValue && splitsAt(text) !== null;
    button.disabled = !ready;
    const hint = text.form.querySelector(".kb-split-hint");
    if (hint) {
      hint.hidden = ready;
      hint.textContent = text.value === text.defaultValue ? CLICK_HINT : SAVE_HINT;
    }
  }

  function setUp() {
    for (const button of document.querySelectorAll("button[data-kb-split]")) {
      const hint = document.createElement("span");
      hint.className = "kb-split-hint";
      hint.textContent = CLICK_HINT;
      button.after(" ", hint);
      update(button.form.querySelector("textarea[name=text]"));
    }
    for (const event of ["focusin", "click", "keyup", "select", "input"]) {
      document.addEventListener(
        event,
        (e) => {
          if (e.target.matches && e.target.matches("textarea[name=text]")) update(e.target);
        },
        true,
      );
    }
    document.addEventListener(
      "selectionchange",
      (e) => {
        const target = e.target.matches ? e.target : document.activeElement;
        if (target && target.matches && target.matches("textarea[name=text]")) update(target);
      },
      true,
    );
  }

  document.addEventListener("mousedown", (event) => {
    // A press on the split button would move focus off the text first: remember where the cursor stood.
    const button = event.target.closest && event.target.closest("button[data-kb-split]");
    if (!button || button.disabled) return;
    const text = button.form.querySelector("textarea[name=text]");
    button.dataset.at = String(splitsAt(text) ?? "");
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("button[data-kb-split]");
    if (!button) return;
    const form = button.form;
    const text = form.querySelector("textarea[name=text]");
    if (text.value !== text.defaultValue) {
      event.preventDefault();
      window.alert("Save the paragraph's new text first: a split cuts the saved text.");
      return;
    }
    const at = button.dataset.at || String(splitsAt(text) ?? "");
    if (!at) {
      event.preventDefault();
      window.alert(HINT + ", then press “Split at the cursor”.");
      return;
    }
    form.querySelector("input[name=at]").value = at;
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
