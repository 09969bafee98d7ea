"""Tests that start a real Celery worker process: the session's ``worker`` fixture, or
workers of their own (``WorkerProcess``); some modules hold, beside them, tests of the
same pages or routes that need no worker."""
