"""Tests that start a real Celery worker process: the session's ``worker`` fixture, or
workers of their own (``WorkerProcess``)."""
