"""The names the ``durable`` app's Celery tasks are registered under
(``durable.engine.tasks``). This module imports nothing: the Celery app
(``dashboard.celery``) and the settings' beat schedule name the tasks before Django is
set up, and the engine sends a run by name without importing the tasks."""

RUN_TASK = "durable.execute_run"  # durable.engine.tasks.execute_run
RETENTION_TASK = "durable.sweep_retention"  # durable.engine.tasks.sweep_retention
CRON_TASK = "durable.fire_cron"  # durable.engine.tasks.fire_cron
WEBHOOK_TASK = "durable.post_webhook"  # durable.engine.tasks.post_webhook
DRILL_TASK = "durable.run_drills"  # durable.drills.tasks.run_drills_task
