// What the pages ask for with data attributes, in a file: the Content-Security-Policy
// allows no inline script, and htmx's hx-on handlers and trigger filters are evaluated
// code (htmx.config.allowEval is off, templates/base.html).

// An element with sse-connect says whether its stream is open (data-sse="open").
document.addEventListener("htmx:sseOpen", function (event) {
  event.target.dataset.sse = "open";
});
["htmx:sseError", "htmx:sseClose"].forEach(function (name) {
  document.addEventListener(name, function (event) {
    delete event.target.dataset.sse;
  });
});

// Polling when no stream is open: an element with data-poll-ms gets a "poll" event that
// often (its hx-trigger lists "poll"), unless it sits inside an open stream. Times are
// kept by id, since each answer replaces the element.
var lastPoll = {};
setInterval(function () {
  document.querySelectorAll("[data-poll-ms]").forEach(function (element) {
    if (element.closest("[data-sse=open]")) return;
    var now = Date.now();
    if (now - (lastPoll[element.id] || 0) < Number(element.dataset.pollMs)) return;
    lastPoll[element.id] = now;
    htmx.trigger(element, "poll");
  });
}, 250);

// A form with data-swap-errors shows the page its request answers with 400 (the form
// with its errors), which htmx would otherwise drop as an error.
document.addEventListener("htmx:beforeSwap", function (event) {
  var source = event.detail.requestConfig && event.detail.requestConfig.elt;
  if (event.detail.xhr.status === 400 && source && source.closest("[data-swap-errors]")) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

// A pane with data-focus-after-settle moves focus to that selector's element once new
// content has settled in it (so a keyboard user lands on what they opened).
document.addEventListener("htmx:afterSettle", function (event) {
  var pane = event.target.closest && event.target.closest("[data-focus-after-settle]");
  if (pane) {
    var target = pane.querySelector(pane.dataset.focusAfterSettle);
    if (target) target.focus();
  }
});
