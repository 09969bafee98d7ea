"""The operator console's pages, one module per area. Views read models and call
``durable.engine``; they never touch a saver or Celery directly."""
