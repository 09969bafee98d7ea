"""The Celery application: `celery -A dashboard worker` runs graphs."""

import os

from celery import Celery
from kombu.transport import sqlalchemy as kombu_sqlalchemy

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["durable"])

# The embedded broker (kombu's SQLAlchemy transport) polls its table, by default once a
# second, and a busy worker waits a whole interval before it takes the next task. The
# transport hands every transport option to SQLAlchemy's create_engine, so
# ``broker_transport_options={"polling_interval": ...}`` fails there; the class default
# is the setting that works.
kombu_sqlalchemy.Transport.polling_interval = 0.05
