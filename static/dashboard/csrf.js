// Every htmx request carries Django's CSRF token, read from <meta name="csrf-token">
// (templates/base.html). A global listener rather than hx-headers on <body>: it does
// not depend on attribute inheritance, which htmx 4 turns off.
document.addEventListener("htmx:configRequest", function (event) {
  var meta = document.querySelector('meta[name="csrf-token"]');
  if (meta) {
    event.detail.headers["X-CSRFToken"] = meta.content;
  }
});
