"""The operator console's pages, one module per area. A view reads through
``dashboard.access`` (scoped to the request's tenant), acts through ``durable.engine``,
takes its input from ``dashboard.forms`` and its pieces from ``dashboard.present``; it
never imports another view, nor touches a saver or Celery."""
