"""The Django project (settings, URLs, ASGI/WSGI, the Celery app) and the operator
console. Importing it loads the Celery app, so that ``@shared_task`` binds to it."""

from .celery import app as celery_app

__all__ = ("celery_app",)
