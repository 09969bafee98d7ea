"""The operator console's pages, one module per area. Views read models and call
``durable.runs``; they never touch a saver or Celery directly."""
