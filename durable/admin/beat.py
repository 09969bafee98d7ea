"""django-celery-beat's models are not in the admin. Their rows follow the crons
(``durable.engine.beat``), which change through the API and the console, scoped to a
tenant and audited; a periodic task edited here would fire what no cron says, for every
tenant's staff to see, until its cron's next change overwrote it."""

from django.contrib import admin
from django_celery_beat import models

for model in (
    models.PeriodicTask,
    models.ClockedSchedule,
    models.CrontabSchedule,
    models.SolarSchedule,
    models.IntervalSchedule,
):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
