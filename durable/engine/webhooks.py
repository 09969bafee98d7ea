"""Posting a run's outcome to the ``webhook`` its request named, once that outcome is
committed: by its worker (``durable.engine.execution``), by a cancel of a run no worker
had taken (``policy.end_pending``), or by the reaper ending a run whose worker died.
Each post is a Celery task of its own (``tasks.post_webhook``, sent by
``queue.send_webhook``), so that a slow receiver holds no run's pool slot.

The payload is the Agent Server's (``langgraph_api/webhook.py``, ``call_webhook``): the
run (``run_id``, ``thread_id``, ``assistant_id``, ``created_at``, ``updated_at``,
``status``, ``metadata``, ``multitask_strategy``), ``run_started_at``, ``run_ended_at``,
``webhook_sent_at`` (ISO 8601), the thread's ``values`` after the run, and ``error``
(``{"error", "message"}``) for a run that failed. A webhook is posted only to a host
``DURABLE_WEBHOOK_ALLOWED_HOSTS`` allows (checked again when sending: the setting may
have changed since the request), redirects are not followed (they could lead anywhere),
and a webhook that fails never changes the run: it is logged, after ``ATTEMPTS`` tries,
the task retried ``backoff(n)`` seconds after its ``n``-th failure.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from durable.engine.checks import InvalidRequest
from durable.engine.options import check_webhook
from durable.engine.state import thread_state
from durable.models import Run
from durable.redaction import redact
from durable.values import jsonable

logger = logging.getLogger(__name__)

ATTEMPTS = 3
BACKOFF_SECONDS = 1.0
TIMEOUT_SECONDS = 10.0


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError for the 3xx


_OPENER = urllib.request.build_opener(_NoRedirects)


def payload(run: Run) -> dict[str, Any]:
    """What is posted for ``run`` (ended, with its ``thread``), as JSON-safe values,
    sensitive ones masked (``durable.redaction``) as in every API answer."""
    body: dict[str, Any] = {
        "run_id": str(run.pk),
        "thread_id": run.thread.name,
        "assistant_id": run.graph,
        "created_at": run.created_at,
        "updated_at": run.ended_at or run.created_at,
        "status": run.status,
        "metadata": run.metadata,
        "multitask_strategy": run.multitask_strategy,
        "run_started_at": run.started_at,
        "run_ended_at": run.ended_at,
        "webhook_sent_at": timezone.now(),
        "values": jsonable(thread_state(run.thread).values),
    }
    if run.status == Run.Status.ERROR:
        body["error"] = {"error": run.error_type, "message": run.error_message}
    return redact(json.loads(json.dumps(body, cls=DjangoJSONEncoder)))


# What one attempt says of the post: done (answered 2xx), or not to be tried again
# (no webhook, a host no longer allowed), or to be tried again.
DONE, GIVE_UP, AGAIN = "done", "give up", "again"


def backoff(failures: int) -> float:
    """Seconds before the next attempt after ``failures`` failed ones (doubling)."""
    return BACKOFF_SECONDS * 2 ** max(0, failures - 1)


def post(run_id: int, attempt: int = 1) -> str:
    """One attempt (number ``attempt`` of ``ATTEMPTS``) to post run ``run_id``'s
    outcome to its webhook, if it has one. Returns ``DONE``, ``GIVE_UP`` or ``AGAIN``
    (the receiver failed, and attempts are left); never raises."""
    run = Run.objects.select_related("thread").filter(pk=run_id).first()
    if run is None or not run.webhook:
        return GIVE_UP
    try:
        check_webhook(run.webhook)
        data = json.dumps(payload(run)).encode()
    except InvalidRequest as exc:
        logger.warning("run %s: webhook not posted: %s", run_id, exc.message)
        return GIVE_UP
    except Exception:
        logger.exception("run %s: webhook payload could not be made", run_id)
        return GIVE_UP
    request = urllib.request.Request(
        run.webhook, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with _OPENER.open(request, timeout=TIMEOUT_SECONDS):
            return DONE
    except Exception as exc:  # the run's outcome stands whatever the receiver does
        logger.warning(
            "run %s: webhook attempt %s of %s failed: %s", run_id, attempt, ATTEMPTS, exc
        )
    return AGAIN if attempt < ATTEMPTS else GIVE_UP
