"""Who asks: console users with a tenant role, all with the password ``PASSWORD``."""

from __future__ import annotations

PASSWORD = "a-test-password-1"


def member(username: str, tenant=None, role: str = "operator"):
    """A user who is a ``role`` of ``tenant`` (default: the default tenant), with
    password ``PASSWORD``."""
    from django.contrib.auth import get_user_model

    from durable.models import Membership, Tenant

    user = get_user_model().objects.create_user(username, password=PASSWORD)
    Membership.objects.create(user=user, tenant=tenant or Tenant.default(), role=role)
    return user
