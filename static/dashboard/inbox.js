// The inbox's keys, as agent-inbox has them: move between entries and answer the focused
// one by pressing its own buttons, so a key sends exactly what a click sends (the same
// form, CSRF token and server checks). "?" opens the list of keys
// (templates/dashboard/inbox.html, #inbox-keys). After an answer begun by a key (sent by
// one, or by the button of an edit or a response a key opened) the inbox comes back (the
// form's "next") and the entry now at the answered one's place, the next interrupt, is
// focused.
(function () {
  var FOCUS_KEY = "inbox-focus";

  function entries() {
    return Array.prototype.slice.call(document.querySelectorAll("article.inbox-entry"));
  }

  function current() {
    var active = document.activeElement;
    return active && active.closest ? active.closest("article.inbox-entry") : null;
  }

  function focusEntry(entry) {
    if (!entry) return;
    entry.focus();
    entry.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    var all = entries();
    if (!all.length) return;
    var at = all.indexOf(current());
    var next = at < 0 ? 0 : Math.min(Math.max(at + step, 0), all.length - 1);
    focusEntry(all[next]);
  }

  // The answer ``form`` sends the operator back to this inbox page.
  function comeBack(form) {
    var back = form.querySelector('input[name="next"]');
    if (!back) {
      back = document.createElement("input");
      back.type = "hidden";
      back.name = "next";
      form.appendChild(back);
    }
    back.value = window.location.pathname + window.location.search;
  }

  // Press the focused entry's button that sends one of ``values``.
  function answer(entry, values) {
    var button = null;
    for (var i = 0; i < values.length && !button; i++) {
      button = entry.querySelector('form.answer-form button[type=submit][value="' + values[i] + '"]');
    }
    if (!button) return false;
    comeBack(button.form);
    button.form.requestSubmit(button);
    return true;
  }

  // Open the entry's <details> whose summary says ``label`` and focus its first input.
  function open(entry, label) {
    var found = Array.prototype.find.call(entry.querySelectorAll("details.edit"), function (d) {
      var summary = d.querySelector("summary");
      return summary && summary.textContent.indexOf(label) === 0;
    });
    if (!found) return false;
    var form = found.closest("form.answer-form");
    if (form) comeBack(form);
    found.open = true;
    var input = found.querySelector("input:not([type=hidden]), textarea, select, button");
    if (input) input.focus();
    return true;
  }

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  function help() {
    var dialog = document.getElementById("inbox-keys");
    if (dialog && !dialog.open) dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") focusEntry(event.target.closest("article.inbox-entry"));
      return;
    }
    var dialog = document.getElementById("inbox-keys");
    if (dialog && dialog.open) return; // the dialog keeps Esc and Tab for itself
    var entry = current();
    var done = true;
    switch (event.key) {
      case "j": case "ArrowDown": move(1); break;
      case "k": case "ArrowUp": move(-1); break;
      case "?": help(); break;
      case "a": done = entry && answer(entry, ["approve", "accept"]); break;
      case "r": done = entry && answer(entry, ["reject"]); break;
      case "i": done = entry && answer(entry, ["ignore"]); break;
      case "e": done = entry && open(entry, "Edit"); break;
      case "p": done = entry && open(entry, "Respond"); break;
      case "x": {
        var box = entry && entry.querySelector("input[type=checkbox][name=threads]");
        if (box) box.checked = !box.checked;
        done = !!box;
        break;
      }
      case "o": {
        var link = entry && entry.querySelector("a.entry-link");
        if (link) link.click();
        done = !!link;
        break;
      }
      default: done = false;
    }
    if (done) event.preventDefault();
  });

  // Where the next interrupt will be: the answered entry's place.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var entry = form.closest && form.closest("article.inbox-entry");
    if (entry && form.querySelector('input[name="next"]')) {
      sessionStorage.setItem(FOCUS_KEY, String(entries().indexOf(entry)));
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var opener = document.querySelector(".keys-open");
    if (opener) opener.addEventListener("click", help);
    var saved = sessionStorage.getItem(FOCUS_KEY);
    sessionStorage.removeItem(FOCUS_KEY);
    var all = entries();
    if (saved !== null && all.length) focusEntry(all[Math.min(Number(saved), all.length - 1)]);
  });
})();
