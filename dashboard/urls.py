from django.contrib import admin
from django.urls import path

from dashboard.views import checkpoints, history, runs, threads
from durable.api import api

urlpatterns = [
    path("", threads.thread_list, name="threads"),
    path("runs/start/", threads.start_run, name="start-run"),
    path("threads/<int:pk>/", threads.thread_detail, name="thread"),
    path("threads/<int:pk>/resume/", threads.resume_thread, name="resume"),
    path("runs/<int:pk>/events/", runs.run_events, name="run-events"),
    # History, the read side (issue 5): the tree, one checkpoint, a diff, the graph.
    path("threads/<int:pk>/history/", history.thread_history, name="thread-history"),
    path(
        "threads/<int:pk>/checkpoints/<str:checkpoint_id>/",
        checkpoints.checkpoint_detail,
        name="checkpoint",
    ),
    path("threads/<int:pk>/diff/", checkpoints.checkpoint_diff, name="diff"),
    path("threads/<int:pk>/graph/", checkpoints.thread_graph, name="thread-graph"),
    path("admin/", admin.site.urls),
    # The Agent Server-shaped API, with its OpenAPI docs at /api/docs.
    path("api/", api.urls),
]
