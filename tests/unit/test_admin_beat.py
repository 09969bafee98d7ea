"""The admin does not show Celery beat's schedule rows: they follow the crons, which
change through the API and the console (scoped and audited)."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_admin_lists_threads_but_not_beats_periodic_tasks(superuser):
    client = Client()
    client.force_login(superuser)
    index = client.get("/admin/").content.decode()
    assert "Threads" in index
    assert "Periodic tasks" not in index and "Crontabs" not in index
    assert client.get("/admin/django_celery_beat/periodictask/").status_code == 404
