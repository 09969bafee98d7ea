"""Assistants: stored configurations of a registered graph, in versions. A registered
graph is also its own default assistant, named by the graph, which is not stored."""

from __future__ import annotations

import uuid

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from durable.models.tenancy import Tenant, TenantQuerySet

NAME_MAX_LENGTH = 255


class Assistant(models.Model):
    """A tenant's assistant, as the Agent Server's ``Assistant``: ``assistant_id`` (the
    id the API and the console show; unique within the tenant), the graph it runs
    (``graph_id``, a registered graph's name), and what a run on it gets beside its own
    (``config``: ``{"configurable", "recursion_limit", "tags"}``; ``context``, LangGraph's
    runtime context). The row holds its latest version's fields, ``version`` its
    number; every change is a new ``AssistantVersion``."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="assistants")
    objects = TenantQuerySet.as_manager()
    assistant_id = models.UUIDField(default=uuid.uuid4)
    graph_id = models.CharField(max_length=100)
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    description = models.TextField(null=True, blank=True)
    config = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    context = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    metadata = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "assistant_id"], name="assistant_id_per_tenant"
            )
        ]

    def __str__(self):
        return f"{self.name} ({self.assistant_id})"


class AssistantVersion(models.Model):
    """One version of an assistant: its fields as they were set then. Versions are
    numbered 1, 2, ... per assistant and never change; the latest is the assistant's
    ``version``, which ``set_latest`` may move back to an older one."""

    assistant = models.ForeignKey(Assistant, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    graph_id = models.CharField(max_length=100)
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    description = models.TextField(null=True, blank=True)
    config = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    context = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    metadata = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["assistant", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["assistant", "version"], name="assistant_version_once")
        ]

    def __str__(self):
        return f"{self.assistant_id} v{self.version}"
