"""The audit trail as CSV rows, in a form a spreadsheet opens without running anything."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator

from durable.models import AuditEvent

CSV_COLUMNS = [
    "created_at",
    "tenant",
    "actor",
    "action",
    "thread_name",
    "thread_id",
    "run_id",
    "checkpoint_id",
    "checkpoint_before",
    "checkpoint_after",
    "reason",
    "detail",
]


class _Echo:
    """A file that hands back what is written, so that ``csv.writer`` makes lines."""

    def write(self, value):
        return value


def csv_lines(events: Iterable[AuditEvent]) -> Iterator[str]:
    """The header line, then one line per event (``events`` with their tenant)."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for event in events:
        yield writer.writerow(_csv_row(event))


def _csv_row(event: AuditEvent) -> list:
    values = {c: getattr(event, c) for c in CSV_COLUMNS if c not in ("tenant", "created_at")}
    values["tenant"] = event.tenant.slug if event.tenant else ""
    values["created_at"] = event.created_at.isoformat()
    values["detail"] = json.dumps(event.detail, sort_keys=True, default=str)
    return [_cell(values[c]) for c in CSV_COLUMNS]


def _cell(value) -> str:
    """A CSV cell that a spreadsheet will not run as a formula (OWASP CSV injection)."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
