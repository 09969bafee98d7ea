from django.contrib import admin
from django.urls import path

from dashboard.views import runs, threads
from durable.api import api

urlpatterns = [
    path("", threads.thread_list, name="threads"),
    path("runs/start/", threads.start_run, name="start-run"),
    path("threads/<int:pk>/", threads.thread_detail, name="thread"),
    path("threads/<int:pk>/resume/", threads.resume_thread, name="resume"),
    path("runs/<int:pk>/events/", runs.run_events, name="run-events"),
    path("admin/", admin.site.urls),
    # The Agent Server-shaped API, with its OpenAPI docs at /api/docs.
    path("api/", api.urls),
]
