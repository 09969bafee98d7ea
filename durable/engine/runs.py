"""The requests for a run: ``submit`` takes a ``RunRequest`` (``durable.engine.requests``)
and starts, resumes, replays, branches or answers again as it asks; ``start``, ``resume``,
``replay`` and ``answer_again`` build one from their keywords, as the console and the
tests call them. Each is checked before anything is written (``checks.check_request``,
then the options: ``options.run_fields``) and writes a ``pending`` Run, recorded in
the audit trail, in one transaction (``durable.engine.operations`` for what they share
with a fork).
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from durable import audit
from durable.engine import policy, versions
from durable.engine.checks import (
    COPY,
    InvalidRequest,
    check_input,
    check_request,
    checked_name,
    checkpoint_config,
    compiled_graph,
    resume_by_id,
    resume_command,
    run_options,
)
from durable.engine.fit import check_fits
from durable.engine.operations import _audited, _new_thread, _refuse_if_busy, _submit
from durable.engine.options import command_for, run_fields
from durable.engine.records import lock_thread, lock_thread_named
from durable.engine.requests import Resume, RunRequest, encoded
from durable.engine.state import config_for, graph_of, thread_state
from durable.engine.update import apply
from durable.models import Checkpoint, Run, Tenant, Thread


def submit(
    request: RunRequest,
    *,
    thread: Thread | None = None,
    name: str | None = None,
    tenant: Tenant | None = None,
    cron: Any = None,
) -> Run:
    """The run ``request`` asks for (``request.kind``): ``start`` on ``thread`` or on
    ``tenant``'s thread ``name`` (created if missing; neither: a new thread), or
    ``resume``, ``replay``, ``branch`` or ``answer_again`` on ``thread``. ``cron`` is the ``Cron``
    whose fire asks for it. Returns the pending Run. Raises ``InvalidRequest`` (see
    ``checks.check_request`` and each kind's own function below)."""
    check_request(request, thread)
    kind = request.kind
    if kind == "start":
        name = thread.name if thread is not None and name is None else name
        return _start(request, name, tenant or (thread.tenant if thread else None), cron)
    if thread is None:
        raise InvalidRequest("thread", f"A {kind} needs a thread.")
    if kind == "resume":
        return _resume(thread, request)
    if kind == "replay":
        return _replay(thread, request)
    if kind == "branch":
        return _branch(thread, request)
    return _answer_again(thread, request)


def start(
    graph: str,
    input: Any,
    *,
    name: str | None = None,
    tenant: Tenant | None = None,
    cron: Any = None,
    **options: Any,
) -> Run:
    """Run ``graph`` with ``input`` (a JSON object whose keys are the graph's input
    channels) on a new thread of ``tenant`` (default: ``Tenant.default()``), or on its
    thread named ``name`` (created if it does not exist). Input ``None`` goes on from the
    named thread's latest checkpoint (LangGraph's ``stream(None, config)``): it must have
    next tasks (``input``) and fit the deployed graph (``graph_version``, as ``resume``).

    ``options`` are ``RunRequest``'s: ``metadata`` (a JSON object, kept on the Run and
    added to the metadata of every checkpoint the run writes), ``durability`` (LangGraph's
    ``sync | async | exit``), ``requested_by`` (a user, whose username is kept, or a
    string), ``stream_modes`` (``checks.STREAM_MODES``, recorded as the run's events
    beside those the engine always records, so that its followers can replay them),
    ``config``, ``context``, ``interrupt_before``, ``interrupt_after``,
    ``after_seconds``, ``webhook`` (``durable.engine.options.graph_options``),
    ``assistant`` (``resolve_assistant``: recorded on the run; its config and context come
    merged in ``config`` and ``context``). ``cron`` is the ``Cron`` whose fire asks for
    the run (``durable.engine.crons``). Returns the pending Run (kind ``start``)."""
    return submit(
        RunRequest(graph=graph, input=input, **options), name=name, tenant=tenant, cron=cron
    )


def _start(request: RunRequest, name: str | None, tenant: Tenant | None, cron: Any) -> Run:
    graph, input = request.graph, request.input
    compiled = compiled_graph(graph)
    if input is not None or name is None:
        check_input(compiled, input)
    options = run_fields(request, compiled)
    if name is not None:
        name = checked_name(name)
    tenant = tenant or Tenant.default()
    with transaction.atomic():
        if name is None:
            thread, created = _new_thread(tenant, None, graph=graph), True
        else:
            thread, created = _named_thread(tenant, name, graph)
        if not thread.graph:  # created bare: its first run binds it to a graph
            thread.graph = graph
            thread.save(update_fields=["graph", "updated_at"])
        check_request(request, thread)
        # Going on from its checkpoint is resuming it: it must fit the deployed graph.
        head = None if input is not None or created else compiled.get_state(config_for(thread))
        if head is not None:
            _check_fits(thread, head)
        if input is None and (head is None or not head.next):
            raise InvalidRequest(
                "input", f"Thread {thread.name!r} has no next task to go on with: give an input."
            )
        return _audited(
            audit.Action.START,
            _submit(thread, kind=Run.Kind.START, input=input, cron=cron, **options),
        )


def _check_fits(thread: Thread, head) -> None:
    """``check_fits`` of the thread's newest checkpoint, whose snapshot ``head`` the
    request has read: nothing more is read when the deployed version wrote it (its
    metadata says so), so a request reads the head checkpoint once."""
    written_by = (head.metadata or {}).get(versions.METADATA_KEY)
    if not thread.graph or written_by != versions.deployed_version(thread.graph).digest:
        check_fits(thread)


def _named_thread(tenant: Tenant, name: str, graph: str) -> tuple[Thread, bool]:
    """Inside a transaction: ``tenant``'s thread ``name`` under its lock, found in one
    statement, or a new one (then ``created``; a row no other transaction can see yet
    needs no lock). Of two requests that create the same name at once, the one whose
    INSERT loses waits for the other's thread and locks it."""
    try:
        thread, created = lock_thread_named(tenant, name), False
        if thread is None:
            with transaction.atomic():
                thread, created = _new_thread(tenant, name, graph=graph), True
    except IntegrityError:
        thread = lock_thread_named(tenant, name)
    thread.tenant = tenant  # read again by the audit row otherwise
    return thread, created


def resume(
    thread: Thread,
    value: Any = None,
    *,
    answers: dict[str, Any] | None = None,
    goto: Any = None,
    update: Any = None,
    **options: Any,
) -> Run:
    """Answer the thread's pending interrupt(s) with a ``resume`` run, which streams
    LangGraph's ``Command`` (``durable.engine.options.command_for``).

    Pass ``value`` when one interrupt is pending: the graph is resumed with
    ``Command(resume=value)``. Pass ``answers`` ``{interrupt_id: value}`` to answer
    several at once: ``Command(resume=answers)`` (LangGraph's resume map); a ``value``
    that is such a map is taken as ``answers`` (``checks.resume_by_id``). On a thread
    with next tasks but no recorded interrupt (stopped at a breakpoint), ``value`` goes
    to the next ``interrupt()`` that runs. ``goto`` (node names or ``{"node", "input"}``
    sends) and ``update`` (state keys) are the ``Command``'s own. Raises
    ``InvalidRequest`` when nothing would run (``resume``), when an id is not pending
    (``answers``), when several are pending and ``answers`` is not used (``resume``),
    or for an unknown node or state key (``goto``, ``update``), and
    ``InvalidRequest("graph_version")`` when the thread's newest checkpoint no longer fits
    the deployed graph (``durable.engine.fit.check_fits``: migrate it with a fork
    first). ``options`` as for ``start``."""
    asked = Resume(value, answers, goto, update)
    return submit(RunRequest(graph=thread.graph or None, resume=asked, **options), thread=thread)


def _resume(thread: Thread, request: RunRequest) -> Run:
    asked = request.resume
    # A bare thread (no graph yet) has nothing to resume: command_for says so.
    compiled = graph_of(thread) if thread.graph or asked.goto or asked.update else None
    state = thread_state(thread)
    _check_fits(thread, state)
    pending = list(state.interrupts)
    value, answers = resume_by_id(pending, asked.value, asked.answers)
    command = command_for(compiled, state, thread.name, value, answers, asked.goto, asked.update)
    options = run_fields(request, compiled)
    by_id = answers is not None
    with transaction.atomic():
        created = _submit(
            lock_thread(thread), kind=Run.Kind.RESUME, **encoded(command, by_id), **options
        )
        decided = None
        if pending and "resume" in command:
            decided = audit.answered(pending, command["resume"], by_id=by_id)
        return _audited(audit.Action.RESUME, created, decided)


def replay(thread: Thread, checkpoint_id: str, **options: Any) -> Run:
    """Run the thread again from one of its checkpoints: a ``replay`` run streams input
    ``None`` with that checkpoint's config, so everything after it executes again (LLM
    calls, tools, and interrupts, which fire again). ``options`` as for ``start``
    (``metadata``, ``durability``, ``multitask_strategy``, ``requested_by``,
    ``stream_modes``). Raises ``InvalidRequest("checkpoint_id")`` for a checkpoint that
    is not the thread's, ``InvalidRequest("graph_version")`` for one that no longer fits
    the deployed graph (``durable.engine.fit``); other errors as for ``start``."""
    request = RunRequest(graph=thread.graph or None, checkpoint_id=checkpoint_id, **options)
    return submit(request, thread=thread)


def _replay(thread: Thread, request: RunRequest) -> Run:
    checkpoint_id = request.checkpoint_id
    checkpoint_config(thread, checkpoint_id)
    check_fits(thread, checkpoint_id)
    options = run_options(request)
    with transaction.atomic():
        thread = lock_thread(thread)
        _check_rollback_base(thread, checkpoint_id, options["multitask_strategy"])
        created = _submit(thread, kind=Run.Kind.REPLAY, checkpoint_id=checkpoint_id, **options)
        return _audited(audit.Action.REPLAY, created)


def _branch(thread: Thread, request: RunRequest) -> Run:
    """Input at a past checkpoint (Agent Chat UI's edit of a sent message: the edited
    message at the checkpoint before it): a ``fork`` run that streams the input with that
    checkpoint's config, as LangGraph's ``stream(input, config)`` does with a
    ``checkpoint_id``, which drops the checkpoint's next tasks, applies the input and
    saves an ``input`` checkpoint on a new branch from there (``langgraph/pregel/
    _loop.py``, ``_first``); the old branch stays. Nothing is written before the run
    executes, so as a replay it may wait behind an active run. Checked as a start's
    input (``input``) and a replay's checkpoint (``checkpoint_id``, ``graph_version``);
    audited as a fork. Returns the pending Run (kind ``fork``, ``checkpoint_id`` and
    ``forked_from`` = the past checkpoint)."""
    checkpoint_id = request.checkpoint_id
    checkpoint_config(thread, checkpoint_id)
    compiled = graph_of(thread)
    check_input(compiled, request.input)
    check_fits(thread, checkpoint_id)
    options = run_fields(request, compiled)
    with transaction.atomic():
        thread = lock_thread(thread)
        _check_rollback_base(thread, checkpoint_id, options["multitask_strategy"])
        created = _submit(
            thread,
            kind=Run.Kind.FORK,
            input=request.input,
            checkpoint_id=checkpoint_id,
            forked_from=checkpoint_id,
            **options,
        )
        return _audited(audit.Action.FORK, created)


def answer_again(
    thread: Thread,
    checkpoint_id: str,
    value: Any = None,
    *,
    answers: dict[str, Any] | None = None,
    **options: Any,
) -> Run:
    """Answer, differently, an interrupt that was already answered: fork at the
    interrupted checkpoint, then resume the fork, so the old branch stays as it was.

    ``checkpoint_id`` is the checkpoint where the interrupt(s) were pending; ``value``
    or ``answers`` (keyed by the ids the interrupts had there) as for ``resume``. The
    fork is ``update_state(config, None, as_node="__copy__")``: a copy of that
    checkpoint without its pending writes (so the interrupted nodes run again) that
    keeps its next tasks. A plain ``update_state(config, None)`` has LangGraph infer the
    node the update comes from, which fails when parallel nodes wrote last ("Ambiguous
    update"). The copied tasks get new ids, so their interrupts do too: given
    ``answers``, the worker first lets the interrupts fire again, then resumes each with
    the answer to its counterpart (same node, same place). Returns the pending Run
    (kind ``resume``, ``forked_from`` = ``checkpoint_id``). Errors: ``checkpoint_id``
    (not the thread's, or no interrupt there), ``resume``, ``answers``, ``graph_version``
    (the checkpoint no longer fits the deployed graph: ``durable.engine.fit``), and
    those of ``fork`` (the thread must have no active run)."""
    request = RunRequest(
        graph=thread.graph or None,
        resume=Resume(value, answers),
        checkpoint_id=checkpoint_id,
        **options,
    )
    return submit(request, thread=thread)


def _answer_again(thread: Thread, request: RunRequest) -> Run:
    checkpoint_id, asked = request.checkpoint_id, request.resume
    base = checkpoint_config(thread, checkpoint_id)
    compiled = graph_of(thread)
    check_fits(thread, checkpoint_id)
    pending = list(compiled.get_state(base).interrupts)
    if not pending:
        raise InvalidRequest(
            "checkpoint_id", f"Checkpoint {checkpoint_id!r} has no interrupt to answer."
        )
    value, answers = resume_by_id(pending, asked.value, asked.answers)
    command = resume_command(pending, value, answers)
    # A run from a past checkpoint takes the request's options, not the graph's.
    options = run_options(request)
    by_id = answers is not None
    with transaction.atomic():
        thread = lock_thread(thread)
        _refuse_if_busy(thread, "fork")
        before = audit.head_checkpoint(thread)
        config = apply(compiled, base, None, COPY)
        created = _submit(
            thread,
            kind=Run.Kind.RESUME,
            **encoded(command, by_id),
            checkpoint_id=config["configurable"]["checkpoint_id"],
            forked_from=checkpoint_id,
            **options,
        )
        decided = audit.answered(pending, command["resume"], by_id=by_id)
        return _audited(
            audit.Action.RESUME, created, decided, before=before, after=created.checkpoint_id
        )


def _check_rollback_base(thread: Thread, checkpoint_id: str, strategy: str) -> None:
    """A rollback deletes the active runs' checkpoints: a run cannot start from one."""
    if strategy != Run.MultitaskStrategy.ROLLBACK:
        return
    doomed = [str(r.pk) for r in policy.active_runs(thread)]
    written_by = (
        Checkpoint.objects.filter(
            thread_id=thread.thread_id, checkpoint_ns="", checkpoint_id=checkpoint_id
        )
        .values_list("metadata", flat=True)
        .first()
        or {}
    ).get("run_id")
    if written_by in doomed:
        raise InvalidRequest(
            "multitask_strategy",
            f"Checkpoint {checkpoint_id!r} was written by run {written_by}, which a "
            "rollback would delete; use interrupt or enqueue.",
        )
