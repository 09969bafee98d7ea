"""The admin of tenants, their members, API tokens, retention policies and audit events.
Creating or changing a policy writes ``retention_change``; creating and revoking a token
write ``token_create`` and ``token_revoke``, and a new token is shown once, in the
page's message. Audit events are read-only."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.utils.html import format_html

from durable import audit, retention, tenancy
from durable.admin.actions import AppliesRetention
from durable.admin.scoping import ReadOnly, TenantScoped
from durable.models import ApiToken, AuditEvent, Membership, RetentionPolicy, Role, Tenant


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Tenant)
class TenantAdmin(AppliesRetention, TenantScoped, admin.ModelAdmin):
    tenant_path = "pk"
    list_display = ("slug", "name", "overdue_after", "created_at")
    list_filter = ("created_at",)
    search_fields = ("slug", "name")
    date_hierarchy = "created_at"
    inlines = [MembershipInline]
    actions = ["apply_retention_now"]

    def get_readonly_fields(self, request, obj=None):
        # The slug is the tenant's id in tokens and store namespaces: it never changes.
        return ("slug", "created_at") if obj is not None else ("created_at",)

    @admin.action(
        description="Apply retention now (the tenants' enabled policies)",
        permissions=["retention"],
    )
    def apply_retention_now(self, request, queryset):
        policies = RetentionPolicy.objects.filter(tenant__in=queryset, enabled=True)
        return self.apply_policies(request, queryset, policies)


@admin.register(Membership)
class MembershipAdmin(TenantScoped, admin.ModelAdmin):
    list_display = ("user", "tenant", "role")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "tenant__slug", "tenant__name")
    autocomplete_fields = ("user", "tenant")
    list_select_related = ("user", "tenant")


class RevokedFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("live", "live"), ("revoked", "revoked")]

    def queryset(self, request, queryset):
        if self.value() == "live":
            return queryset.filter(revoked_at=None)
        if self.value() == "revoked":
            return queryset.exclude(revoked_at=None)
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(TenantScoped, admin.ModelAdmin):
    """Tokens are made by ``durable.tenancy.create_token`` (only the digest is stored;
    the token is shown once, in a message) and revoked by the **Revoke** action; they
    are never edited or deleted, so the record of who made them stays."""

    list_display = (
        "name",
        "tenant",
        "role",
        "prefix",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = (RevokedFilter, "role", "tenant")
    search_fields = ("name", "prefix", "tenant__slug", "created_by")
    list_select_related = ("tenant",)
    actions = ["revoke_tokens"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("tenant", "name", "role")
        return (
            "tenant",
            "name",
            "role",
            "prefix",
            "created_by",
            "created_at",
            "last_used_at",
            "revoked_at",
        )

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj) if obj is not None else ()

    def has_delete_permission(self, request, obj=None):
        return False

    def formfield_for_choice_field(self, db_field, request, **kwargs):
        if db_field.name == "role":  # a token reads or acts; it manages nothing
            kwargs["choices"] = [(r.value, r.label) for r in (Role.VIEWER, Role.OPERATOR)]
        return super().formfield_for_choice_field(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        if change:  # nothing is editable; the form saves nothing
            return
        row, token = tenancy.create_token(
            obj.tenant, obj.name, role=obj.role, created_by=request.user.get_username()
        )
        obj.pk = row.pk
        for name in ("digest", "prefix", "created_by", "created_at"):
            setattr(obj, name, getattr(row, name))
        obj._state.adding = False
        audit.record(
            AuditEvent.Action.TOKEN_CREATE,
            actor=request.user,
            tenant=row.tenant,
            detail={"token": row.name, "prefix": row.prefix, "role": row.role, "id": row.pk},
        )
        messages.warning(
            request,
            format_html(
                "The new token of {} is <code>{}</code>. Copy it now: it is not stored and "
                "cannot be shown again.",
                row.tenant,
                token,
            ),
        )

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke_tokens(self, request, queryset):
        revoked = 0
        with transaction.atomic():
            for row in queryset.select_related("tenant"):
                if tenancy.revoke(row):
                    revoked += 1
                    audit.record(
                        AuditEvent.Action.TOKEN_REVOKE,
                        actor=request.user,
                        tenant=row.tenant,
                        detail={"token": row.name, "prefix": row.prefix, "id": row.pk},
                    )
        self.message_user(request, f"{revoked} token{'s' * (revoked != 1)} revoked.")


def _policy_fields(policy: RetentionPolicy) -> dict:
    return {
        "tenant": policy.tenant.slug,
        "graph": policy.graph,
        "max_age": _duration(policy.max_age),
        "strategy": policy.strategy,
        "keep_last": policy.keep_last,
        "enabled": policy.enabled,
    }


def _duration(value: timedelta | None) -> str | None:
    return None if value is None else str(value)


class RetentionPolicyForm(forms.ModelForm):
    """A policy refused with what it lacks (``durable.retention.policy_problems``), on the
    field at fault. A policy whose graph is no longer registered may still be changed
    (disabled, say) as long as its graph is not."""

    class Meta:
        model = RetentionPolicy
        fields = "__all__"

    def clean(self):
        cleaned = super().clean()
        problems = retention.policy_problems(
            cleaned.get("graph") or "", cleaned.get("max_age"), cleaned.get("keep_last")
        )
        if self.instance.pk is not None and "graph" not in self.changed_data:
            problems.pop("graph", None)
        for field, message in problems.items():
            self.add_error(field, message)
        return cleaned


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(AppliesRetention, TenantScoped, admin.ModelAdmin):
    form = RetentionPolicyForm
    list_display = ("tenant", "graph_or_all", "max_age", "strategy", "keep_last", "enabled")
    list_filter = ("enabled", "strategy", "tenant")
    search_fields = ("tenant__slug", "graph")
    list_select_related = ("tenant",)
    readonly_fields = ("updated_at",)
    actions = ["apply_retention_now"]

    @admin.display(description="graph", ordering="graph")
    def graph_or_all(self, obj):
        return obj.graph or "(every graph)"

    def save_model(self, request, obj, form, change):
        before = None
        if change:
            before = _policy_fields(RetentionPolicy.objects.select_related("tenant").get(pk=obj.pk))
        super().save_model(request, obj, form, change)
        after = _policy_fields(obj)
        detail = {"change": "changed" if change else "created", "policy": obj.pk, **after}
        if before is not None:
            detail["changed"] = {k: [before[k], after[k]] for k in after if before[k] != after[k]}
        audit.record(
            AuditEvent.Action.RETENTION_CHANGE, actor=request.user, tenant=obj.tenant, detail=detail
        )

    def delete_model(self, request, obj):
        self._record_deleted(request, obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for obj in queryset.select_related("tenant"):
                self._record_deleted(request, obj)
            super().delete_queryset(request, queryset)

    def _record_deleted(self, request, obj):
        audit.record(
            AuditEvent.Action.RETENTION_CHANGE,
            actor=request.user,
            tenant=obj.tenant,
            detail={"change": "deleted", "policy": obj.pk, **_policy_fields(obj)},
        )

    @admin.action(
        description="Apply retention now (the selected policies)", permissions=["retention"]
    )
    def apply_retention_now(self, request, queryset):
        return self.apply_policies(request, queryset, queryset)


@admin.register(AuditEvent)
class AuditEventAdmin(TenantScoped, ReadOnly, admin.ModelAdmin):
    """Append-only: staff with the view permission read it; nobody adds, changes or
    deletes an event here (the model and a database trigger refuse to anyway)."""

    list_display = (
        "created_at",
        "tenant",
        "actor",
        "action",
        "thread_name",
        "run_id",
        "checkpoint_before",
        "checkpoint_after",
        "reason",
    )
    list_filter = ("action", "tenant", "created_at")
    search_fields = ("actor", "thread_name", "=thread_id", "reason")
    date_hierarchy = "created_at"
    list_select_related = ("tenant",)
    readonly_fields = [f.name for f in AuditEvent._meta.fields]
    show_full_result_count = False

    def get_actions(self, request):
        return {}
