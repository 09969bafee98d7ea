"""The audit trail: one append-only ``AuditEvent`` per operator action.

``record`` is called by the operations themselves (``durable.engine.operations``,
``durable.retention``, the token admin, the login signal), in the transaction that does
the work, so an action and its event are committed together or not at all. A resume's
event keeps what each answer decided (``answered``), not only that an answer was given.
"""

from __future__ import annotations

from typing import Any

from durable.engine.checks import actor as actor_name
from durable.history import newest_checkpoint_id
from durable.interrupt_payloads import action_names
from durable.models import AuditEvent, Run, Tenant, Thread

Action = AuditEvent.Action


def head_checkpoint(thread: Thread) -> str:
    """The thread's newest root checkpoint id, as an event's ``before``/``after`` keeps it
    (``""`` when it has none)."""
    return newest_checkpoint_id(thread.thread_id) or ""


def record(
    action: str,
    *,
    actor: Any,
    tenant: Tenant | None = None,
    thread: Thread | None = None,
    run: Run | None = None,
    checkpoint_id: str = "",
    before: str = "",
    after: str = "",
    reason: str = "",
    detail: dict | None = None,
) -> AuditEvent:
    """Append one event. ``actor`` is a user, a string (``"token:<name>"``, ``"beat"``)
    or ``None`` (``"system"``); ``tenant`` defaults to the thread's. ``before`` and
    ``after`` are the thread's newest checkpoint before and after the action, where the
    action itself changes it (a fork, a prune); a run's own checkpoints are on the run."""
    if thread is not None and tenant is None:
        tenant = thread.tenant
    return AuditEvent.objects.create(
        tenant=tenant,
        actor=actor_name(actor) or "system",
        action=action,
        thread_id=thread.thread_id if thread else "",
        thread_name=thread.name if thread else "",
        run_id=run.pk if run else None,
        checkpoint_id=checkpoint_id or "",
        checkpoint_before=before or "",
        checkpoint_after=after or "",
        reason=reason or "",
        detail=detail or {},
    )


def answered(pending: list, resume: Any, by_id: bool) -> list[dict]:
    """The decisions of a resume, one per answered action, for an event's ``detail``
    (``"answers"``): ``{"interrupt_id", "decision", ...}`` where ``decision`` is

    - for a LangChain v1 ``HITLRequest`` answer (``{"decisions": [...]}``), each
      decision's ``type`` (``approve``, ``edit``, ``reject``, ...) with the ``action``
      it answers, an edit's ``args`` and a rejection's ``message``;
    - for an agent-inbox answer (a list of ``{"type", "args"}``), its ``type``
      (``accept``, ``edit`` with the edited ``args``, ``response`` with its ``text``,
      ``ignore``) with the ``action`` it answers;
    - for any other answer, ``"answer"``, with the ``value`` given.

    ``pending`` are the ``Interrupt``s answered; ``resume`` is the one answer (``by_id``
    false) or ``{interrupt_id: answer}``. The payload kinds are ``durable.interrupt_payloads``'."""
    answers = resume if by_id else {pending[0].id: resume}
    values = {i.id: i.value for i in pending}
    found = []
    for interrupt_id, answer in answers.items():
        for entry in _decisions(values.get(interrupt_id), answer):
            found.append({"interrupt_id": interrupt_id, **entry})
    return found


def _decisions(asked: Any, answer: Any) -> list[dict]:
    names = action_names(asked)
    if isinstance(answer, dict) and _typed(answer.get("decisions")):
        return [
            _hitl(d, names[n] if n < len(names) else None)
            for n, d in enumerate(answer["decisions"])
        ]
    if _typed(answer):
        return [_human(r, names[0] if names else None) for r in answer]
    return [{"decision": "answer", "value": answer}]


def _typed(items: Any) -> bool:
    """A non-empty list of ``{"type": str, ...}``: decisions or agent-inbox responses."""
    return (
        isinstance(items, list)
        and bool(items)
        and all(isinstance(i, dict) and isinstance(i.get("type"), str) for i in items)
    )


def _hitl(decision: dict, action: str | None) -> dict:
    entry = {"decision": decision["type"], "action": action}
    if "message" in decision:
        entry["message"] = decision["message"]
    edited = decision.get("edited_action")
    if isinstance(edited, dict):
        entry["args"] = edited.get("args")
    return entry


def _human(response: dict, action: str | None) -> dict:
    entry = {"decision": response["type"], "action": action}
    args = response.get("args")
    if response["type"] == "edit":
        entry["args"] = args.get("args") if isinstance(args, dict) else args
    elif response["type"] == "response":
        entry["text"] = args
    return entry


def rejections(answers: list[dict]) -> str:
    """The reasons given with the rejections among ``answers`` (``answered``), joined."""
    return "; ".join(
        str(a["message"]) for a in answers if a["decision"] == "reject" and a.get("message")
    )


def record_login(sender, request, user, **kwargs) -> None:
    """``user_logged_in``: one event in each tenant the user is a member of, so that
    every tenant's trail shows who logged in to it (none for a user of no tenant)."""
    for membership in user.memberships.select_related("tenant"):
        record(Action.LOGIN, actor=user, tenant=membership.tenant)
