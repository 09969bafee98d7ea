"""The ASGI application: `make run` serves it with uvicorn, so that server-sent events
stream (under WSGI Django would collect an async stream whole before sending it).

With ``DEBUG`` on, static files (the console's CSS, htmx from django-htmx, the API docs'
Swagger UI) are served by Django's ``ASGIStaticFilesHandler``, as ``runserver`` serves
them, straight from each app's ``static/`` folder: nothing to collect and no extra
dependency. With ``DEBUG`` off, run ``manage.py collectstatic`` and let the reverse proxy
in front serve ``STATIC_ROOT`` at ``STATIC_URL``.
"""

import os

from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
application = get_asgi_application()

from durable.engine import inline  # noqa: E402 (needs the settings configured above)

# The server imports the application on its main thread: the runs this process executes
# drain on SIGTERM before the server's own handler stops it.
inline.drain_on_sigterm()
if settings.DEBUG:
    application = ASGIStaticFilesHandler(application)
