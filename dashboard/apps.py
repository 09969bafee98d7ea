"""The console's Django app; it registers the template tags (``dashboard.templatetags``)."""

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Operator console"
