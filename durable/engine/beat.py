"""The cron schedules, for Celery beat: the one module that writes django-celery-beat's
tables. A ``Cron`` row is the source of truth; its ``PeriodicTask`` (named
``cron:<cron_id>``, on a ``CrontabSchedule`` in the cron's timezone) only wakes
``fire_cron`` up in a worker at each slot, and follows the row on every create, change
and delete (``follow``). Beat's ``DatabaseScheduler`` reads these tables as they change,
so a new cron needs no restart. A deleted cron's task goes with it however the row goes
(``delete_cron``, or its thread deleted: ``forget``)."""

from __future__ import annotations

import json

from django.db.models.signals import post_delete
from django.dispatch import receiver
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from durable import conf
from durable.models import Cron
from durable.tasknames import CRON_TASK


def follow(cron: Cron) -> None:
    """Make the cron's ``PeriodicTask`` say what the row says (schedule, timezone,
    enabled), inside the caller's transaction."""
    minute, hour, day_of_month, month_of_year, day_of_week = cron.schedule.split()
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=minute,
        hour=hour,
        day_of_month=day_of_month,
        month_of_year=month_of_year,
        day_of_week=day_of_week,
        timezone=cron.timezone,
    )
    PeriodicTask.objects.update_or_create(
        name=cron.task_name,
        defaults={
            "task": CRON_TASK,
            "crontab": crontab,
            "args": json.dumps([cron.pk]),
            "enabled": cron.enabled,
            "description": f"{cron.tenant.slug}: {cron.assistant_id}",
            # A message no worker took within the grace would find its slot stale anyway:
            # workers back from an outage drop the backlog instead of reading it.
            "expire_seconds": max(1, int(conf.DURABLE_CRON_GRACE_SECONDS)),
        },
    )


@receiver(post_delete, sender=Cron, dispatch_uid="durable-cron-beat-task")
def forget(sender, instance: Cron, **kwargs) -> None:
    """A cron row was deleted (by ``delete_cron``, or with its thread): delete its
    ``PeriodicTask`` in the same transaction (its ``CrontabSchedule`` may serve others)."""
    for task in PeriodicTask.objects.filter(name=instance.task_name):
        task.delete()  # one by one: the delete signal tells beat the schedule changed
