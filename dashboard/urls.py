from django.contrib import admin
from django.urls import path

from dashboard import views
from durable.api import api

urlpatterns = [
    path("", views.thread_list, name="threads"),
    path("runs/start/", views.start_run, name="start-run"),
    path("threads/<int:pk>/", views.thread_detail, name="thread"),
    path("threads/<int:pk>/resume/", views.resume_thread, name="resume"),
    path("runs/<int:pk>/events/", views.run_events, name="run-events"),
    path("admin/", admin.site.urls),
    # The Agent Server-shaped API, with its OpenAPI docs at /api/docs.
    path("api/", api.urls),
]
