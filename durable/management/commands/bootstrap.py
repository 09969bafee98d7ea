"""``manage.py bootstrap``: what a fresh installation needs before anyone can log in.

Creates the default tenant and, when no user exists yet, a superuser who is an admin of
it: username ``DURABLE_ADMIN_USERNAME`` (default ``admin``), password
``DURABLE_ADMIN_PASSWORD`` (settings, read from the environment: ``durable.conf``) or,
when that is empty, a random one written to
``<DURABLE_VAR_DIR>/admin-password`` (readable by its owner only) and printed once.
Does nothing more on later runs, so ``make run`` calls it every time.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from durable import conf
from durable.models import Membership, Role, Tenant


class Command(BaseCommand):
    help = "Create the default tenant and, on a fresh database, its first admin."

    def handle(self, *args, **options):
        tenant = Tenant.default()
        users = get_user_model().objects
        if users.exists():
            return
        username = conf.DURABLE_ADMIN_USERNAME
        chosen = conf.DURABLE_ADMIN_PASSWORD
        password = chosen or secrets.token_urlsafe(12)
        user = users.create_superuser(username, password=password)
        Membership.objects.create(user=user, tenant=tenant, role=Role.ADMIN)
        # The user first, then the password: whoever reads the output learns whose it is.
        self.stdout.write(f"Created superuser {username!r}, an admin of tenant {tenant.slug!r}.")
        if not chosen:
            path = Path(conf.DURABLE_VAR_DIR) / "admin-password"
            path.write_text(password + "\n")
            path.chmod(0o600)
            self.stdout.write(f"Its password: {password} (also in {path})")
