"""A cron as the Crons page shows it: its schedule in words (cron-descriptor) beside the
expression, and its last runs."""

from __future__ import annotations

from dataclasses import dataclass

from cron_descriptor import Options, get_description
from django.db.models import F, Window
from django.db.models.functions import RowNumber

from durable.models import Cron, Run

LAST_RUNS = 5


@dataclass(frozen=True)
class CronRow:
    cron: Cron
    words: str
    last_runs: list[Run]


def in_words(schedule: str) -> str:
    """``"0 9 * * 1-5"`` as ``"At 09:00, Monday through Friday"``."""
    options = Options()
    options.use_24hour_time_format = True
    try:
        return get_description(schedule, options)
    except Exception:  # a stored expression is valid; words are a courtesy
        return schedule


def rows(crons: list[Cron], runs) -> list[CronRow]:
    """Each of ``crons`` (a page of them) with its words and its ``LAST_RUNS`` newest of
    ``runs`` (a ``Run`` queryset), newest first. One query for all the crons' runs, and
    at most ``LAST_RUNS`` a cron however many it has had."""
    ranked = (
        runs.filter(cron__in=[c.pk for c in crons])
        .annotate(nth=Window(RowNumber(), partition_by=[F("cron")], order_by=F("pk").desc()))
        .filter(nth__lte=LAST_RUNS)
        .order_by("cron", "-pk")
    )
    last: dict[int, list[Run]] = {}
    for run in ranked:
        last.setdefault(run.cron_id, []).append(run)
    return [CronRow(c, in_words(c.schedule), last.get(c.pk, [])) for c in crons]
