"""Every URL of the project: the console's pages, login, the tenant switch, the Django
admin and the HTTP API under ``/api/``."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path, register_converter

from dashboard import errors, tenancy
from dashboard.views import (
    actions,
    assistants,
    audit,
    checkpoints,
    crons,
    divergence,
    fork,
    history,
    inbox,
    metrics,
    operations,
    runs,
    store,
    tenant,
    threads,
)
from durable.api import api


class CheckpointIdConverter:
    """A checkpoint id as the tables can hold one: at most 64 characters, none of them a
    slash or NUL (which PostgreSQL refuses in text, a 500 rather than a 404)."""

    regex = r"[^/\x00]{1,64}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(CheckpointIdConverter, "checkpoint")

handler404 = errors.not_found
handler500 = errors.server_error

urlpatterns = [
    path("", threads.thread_list, name="threads"),
    path("runs/start/", threads.start_run, name="start-run"),
    path("threads/<int:pk>/", threads.thread_detail, name="thread"),
    path("threads/<int:pk>/resume/", threads.resume_thread, name="resume"),
    path("runs/<int:pk>/events/", runs.run_events, name="run-events"),
    path("runs/<int:pk>/events/<int:seq>/", runs.run_event, name="run-event"),
    # History, the read side: the tree, one checkpoint, a diff, the graph.
    path("threads/<int:pk>/history/", history.thread_history, name="thread-history"),
    path(
        "threads/<int:pk>/checkpoints/<checkpoint:checkpoint_id>/",
        checkpoints.checkpoint_detail,
        name="checkpoint",
    ),
    path(
        "threads/<int:pk>/checkpoints/<checkpoint:checkpoint_id>/json/",
        checkpoints.checkpoint_json,
        name="checkpoint-json",
    ),
    path(
        "threads/<int:pk>/checkpoints/<checkpoint:checkpoint_id>/reveal/",
        checkpoints.reveal_value,
        name="reveal",
    ),
    path("threads/<int:pk>/diff/", checkpoints.checkpoint_diff, name="diff"),
    path("threads/<int:pk>/graph/", checkpoints.thread_graph, name="thread-graph"),
    path("threads/<int:pk>/divergence/", divergence.thread_divergence, name="thread-divergence"),
    path("runs/<int:pk>/divergence/", divergence.run_divergence, name="run-divergence"),
    # The action pages: inbox, fork, replay, run, store.
    path("inbox/", inbox.inbox, name="inbox"),
    path("inbox/bulk/", inbox.bulk, name="inbox-bulk"),
    path("inbox/threads/<int:pk>/", inbox.inbox_thread, name="inbox-thread"),
    path("inbox/threads/<int:pk>/answer/", inbox.answer, name="inbox-answer"),
    path("inbox/threads/<int:pk>/close/", inbox.close, name="inbox-close"),
    path("threads/<int:pk>/checkpoints/<checkpoint:checkpoint_id>/fork/", fork.fork, name="fork"),
    path(
        "threads/<int:pk>/checkpoints/<checkpoint:checkpoint_id>/fork/preview/",
        fork.fork_preview,
        name="fork-preview",
    ),
    path(
        "threads/<int:pk>/checkpoints/<checkpoint:checkpoint_id>/replay/",
        actions.replay,
        name="replay",
    ),
    path("runs/<int:pk>/", runs.run_detail, name="run"),
    path("runs/<int:pk>/cancel/", runs.cancel_run, name="cancel-run"),
    path("assistants/", assistants.assistant_list, name="assistants"),
    path("assistants/<uuid:assistant_id>/", assistants.assistant_detail, name="assistant"),
    path(
        "assistants/<uuid:assistant_id>/latest/",
        assistants.assistant_latest,
        name="assistant-latest",
    ),
    path("assistants/<uuid:assistant_id>/diff/", assistants.assistant_diff, name="assistant-diff"),
    path("assistants/<uuid:assistant_id>/run/", assistants.assistant_run, name="assistant-run"),
    path(
        "assistants/<uuid:assistant_id>/delete/",
        assistants.assistant_delete,
        name="assistant-delete",
    ),
    path("store/", store.store, name="store"),
    path("audit/", audit.audit, name="audit"),
    path("operations/", operations.operations, name="operations"),
    path("crons/", crons.cron_list, name="crons"),
    path("crons/<int:pk>/enable/", crons.cron_enable, name="cron-enable"),
    path("crons/<int:pk>/delete/", crons.cron_delete, name="cron-delete"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("tenant/", tenancy.switch_tenant, name="switch-tenant"),
    path("tenant/settings/", tenant.tenant_settings, name="tenant-settings"),
    path("admin/", admin.site.urls),
    # The Agent Server-shaped API, with its OpenAPI docs at /api/docs.
    path("api/", api.urls),
    # Prometheus' scrape (durable.metrics), guarded by DURABLE_METRICS_TOKEN.
    path("metrics", metrics.metrics, name="metrics"),
]
