"""The audit trail as the page and the CSV show it: a resume's decisions in words
(``decisions``), and CSV rows in a form a spreadsheet opens without running anything."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator

from durable.models import AuditEvent
from durable.redaction import redact

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
    "decision",
    "reason",
    "detail",
]


class _Echo:
    """A file that hands back what is written, so that ``csv.writer`` makes lines."""

    def write(self, value):
        return value


def decisions(event: AuditEvent) -> str:
    """What a resume decided, in words, from the event's ``detail["answers"]``
    (``durable.audit.answered``): ``approve pay_expense``, ``reject pay_expense: <its
    reason>``, ``edit pay_expense: <the edited arguments as JSON>``, ``response to
    <action>: <text>``, ``answer: <JSON>``..., joined by ``; ``; for an assistant's event
    (``durable.engine.stored_assistants``), the assistant and the version it left
    latest: ``Ann (<assistant_id>, graph options): version 2``; for a reveal, the path
    revealed (``revealed payment.card_number``); ``""`` for an event that answered
    nothing."""
    detail = redact(event.detail) if isinstance(event.detail, dict) else {}
    if event.action == AuditEvent.Action.REVEAL:
        return f"revealed {detail.get('path')}"
    if "assistant_id" in detail:
        return (
            f"{detail.get('name')} ({detail['assistant_id']}, graph {detail.get('graph_id')}): "
            f"version {detail.get('version')}"
        )
    answers = detail.get("answers")
    return "; ".join(_in_words(a) for a in answers or () if isinstance(a, dict))


def _in_words(answer: dict) -> str:
    kind = str(answer.get("decision", ""))
    if kind == "answer":
        return f"answer: {_json(answer.get('value'))}"
    action = answer.get("action")
    said = f"{kind} {'to ' if kind == 'response' else ''}{action}" if action else kind
    if answer.get("message"):  # a rejection's reason, or a HITL respond's text
        return f"{said}: {answer['message']}"
    if kind == "edit" and "args" in answer:
        return f"{said}: {_json(answer['args'])}"
    if kind == "response" and answer.get("text") is not None:
        return f"{said}: {answer['text']}"
    return said


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def csv_lines(events: Iterable[AuditEvent]) -> Iterator[str]:
    """The header line, then one line per event (``events`` with their tenant)."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for event in events:
        yield writer.writerow(_csv_row(event))


def _csv_row(event: AuditEvent) -> list:
    own = ("tenant", "created_at", "decision")
    values = {c: getattr(event, c) for c in CSV_COLUMNS if c not in own}
    values["decision"] = decisions(event)
    values["tenant"] = event.tenant.slug if event.tenant else ""
    values["created_at"] = event.created_at.isoformat()
    values["detail"] = json.dumps(redact(event.detail), sort_keys=True, default=str)
    return [_cell(values[c]) for c in CSV_COLUMNS]


def _cell(value) -> str:
    """A CSV cell that a spreadsheet will not run as a formula (OWASP CSV injection)."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
