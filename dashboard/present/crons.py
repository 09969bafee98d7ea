"""A cron as the Crons page shows it: its schedule in words (cron-descriptor) beside the
expression, and its last runs."""

from __future__ import annotations

from dataclasses import dataclass

from cron_descriptor import Options, get_description

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


def rows(crons, runs) -> list[CronRow]:
    """Each of ``crons`` with its words and its ``LAST_RUNS`` newest of ``runs``."""
    return [
        CronRow(c, in_words(c.schedule), list(runs.filter(cron=c).order_by("-pk")[:LAST_RUNS]))
        for c in crons
    ]
