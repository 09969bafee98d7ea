"""Which rows a staff user sees in this admin: a superuser every tenant's; anyone else
the rows of the tenants where their membership is ``admin`` (or every tenant's, read-only
by Django's view permissions, as an auditor: ``durable.tenancy.is_auditor``), and only
those tenants to pick in a form. ``TenantScoped.get_queryset`` is the one place."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from durable import tenancy
from durable.models import Role, Tenant, Thread


def managed_tenants(request) -> QuerySet[Tenant]:
    """The tenants ``request.user`` manages here: all for a superuser, else those of their
    ``admin`` memberships. Forms offer only these."""
    if request.user.is_superuser:
        return Tenant.objects.all()
    return Tenant.objects.filter(memberships__user=request.user, memberships__role=Role.ADMIN)


def visible_tenants(request) -> QuerySet[Tenant]:
    """The tenants whose rows ``request.user`` sees here: the managed ones, or all for a
    staff auditor (who reads, by Django's view permissions)."""
    if tenancy.is_auditor(request.user):
        return Tenant.objects.all()
    return managed_tenants(request)


class TenantScoped:
    """Rows of the managed tenants only, by the model's own scoping
    (``TenantQuerySet.of_tenants``, which the API and the console apply too). A model
    without it names ``tenant_path``, the lookup to its tenant; models keyed by a
    checkpointer thread id or a store namespace override ``scope``."""

    tenant_path = None

    def scope(self, queryset: QuerySet, tenants: QuerySet[Tenant]) -> QuerySet:
        if self.tenant_path is None:
            return queryset.of_tenants(tenants)
        return queryset.filter(**{f"{self.tenant_path}__in": tenants})

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return self.scope(queryset, visible_tenants(request))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.related_model is Tenant and not request.user.is_superuser:
            kwargs["queryset"] = managed_tenants(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ByCheckpointThread(TenantScoped):
    """Checkpoint tables hold the checkpointer's thread id, not a foreign key."""

    def scope(self, queryset, tenants):
        keys = Thread.objects.filter(tenant__in=tenants).values("thread_id")
        return queryset.filter(thread_id__in=keys)


class ByNamespace(TenantScoped):
    """Store items of a tenant live under its slug (``durable.persistence.store.scoped``)."""

    def scope(self, queryset, tenants):
        under = Q(pk__in=[])
        for slug in tenants.values_list("slug", flat=True):
            under |= Q(namespace=slug) | Q(namespace__startswith=f"{slug}.")
        return queryset.filter(under)


class ReadOnly:
    """Rows that change only through the saver, the store, ``durable.engine.operations`` and the
    workers."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
