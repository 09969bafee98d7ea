"""Tenants, their members' roles and their API tokens."""

from datetime import timedelta

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

# The longest "overdue after" a tenant may set: past it the threads list's overdue filter
# (now minus the setting) leaves the range of dates and of the database's integers.
OVERDUE_AFTER_MAX = timedelta(days=3650)


class TenantQuerySet(models.QuerySet):
    """Rows that belong to a tenant, through ``tenant_path`` (the lookup from the model to
    its tenant). ``of_tenants`` is the one scoping that the API, the console and the admin
    apply."""

    tenant_path = "tenant"

    def of_tenants(self, tenants):
        """The rows of ``tenants``: one ``Tenant``, a queryset of them, or ``None`` (no
        rows). For one tenant each row's ``tenant`` is that very object, as its reverse
        manager gives it (``tenant.threads``), so that nothing reads it again."""
        if tenants is None:
            return self.none()
        if not isinstance(tenants, Tenant):
            return self.filter(**{f"{self.tenant_path}__in": tenants})
        if self.tenant_path != "tenant":
            return self.filter(**{self.tenant_path: tenants})
        field = self.model._meta.get_field("tenant")
        return getattr(tenants, field.remote_field.get_accessor_name()).all() & self


class Tenant(models.Model):
    """Who a thread belongs to. ``slug`` is the tenant's id where one is shown or stored
    (API tokens, store namespaces): it never changes once created."""

    DEFAULT_SLUG = "default"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    # The inbox marks an interrupt overdue once it has waited this long.
    # At least a second: zero or a negative one would mark every interrupt overdue at once,
    # and a fraction of a second is no wait a person could answer within.
    overdue_after = models.DurationField(
        default=timedelta(hours=24),
        help_text="An interrupt waiting longer than this is marked overdue (e.g. 1 00:00:00).",
        validators=[
            MinValueValidator(
                timedelta(seconds=1),
                "Overdue after must be at least 1 second (00:00:01); e.g. 1 00:00:00 for a day.",
            ),
            MaxValueValidator(
                OVERDUE_AFTER_MAX, f"Overdue after must be at most {OVERDUE_AFTER_MAX.days} days."
            ),
        ],
    )

    class Meta:
        ordering = ["slug"]
        # A staff auditor: reads every tenant's threads and audit trail, changes nothing.
        permissions = [("audit_all_tenants", "Can read every tenant's threads and audit trail")]

    def __str__(self):
        return self.slug

    @classmethod
    def default(cls) -> "Tenant":
        """The tenant of threads created without one (scripts, the embedded demo); made
        by migration 0010, which moved every earlier thread into it."""
        tenant, _ = cls.objects.get_or_create(slug=cls.DEFAULT_SLUG, defaults={"name": "Default"})
        return tenant


class Role(models.TextChoices):
    """What a member (or an API token) may do in its tenant: a viewer reads; an
    operator also resumes, forks, replays, cancels and deletes; an admin also manages
    the tenant's tokens and retention."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"


class Membership(models.Model):
    """``user`` belongs to ``tenant`` with ``role``."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    objects = TenantQuerySet.as_manager()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="membership_once_per_tenant")
        ]

    def __str__(self):
        return f"{self.user} in {self.tenant} ({self.role})"


class ApiToken(models.Model):
    """A tenant's API key, sent as the ``x-api-key`` header (what ``langgraph-sdk``
    sends for ``api_key=``). Only its SHA-256 ``digest`` is stored: the token is a
    random 256-bit secret, shown once when created (``durable.tenancy.create_token``),
    so a fast hash is enough and a leaked table reveals no usable key."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_tokens")
    objects = TenantQuerySet.as_manager()
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.OPERATOR)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False, help_text="To recognise it.")
    created_by = models.CharField(max_length=150, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    def __str__(self):
        return f"{self.tenant}: {self.name} ({self.prefix}…)"
