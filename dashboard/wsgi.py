"""The WSGI application, for servers without ASGI: pages work, but a run's live events
are collected whole before they are sent (``dashboard.asgi`` streams them)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
application = get_wsgi_application()
