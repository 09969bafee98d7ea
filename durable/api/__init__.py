"""The HTTP API, shaped after LangGraph's Agent Server API so that the official
``langgraph-sdk`` client works against it unchanged (``get_sync_client(url=".../api")``).

Resources, paths and fields follow the Agent Server's where they exist: threads, their
state and history, runs (background, streamed, waited for) and assistants. An assistant is
a stored configuration of a registered graph (its ``assistant_id`` a UUID, its ``graph_id``
the graph), in versions: each change is a new version, one of them the latest, and a run
on it gets the latest version's ``config`` and ``context`` beneath its own (its keys win;
``configurable`` and ``context`` are merged key by key). Every registered graph is also its
own default assistant, named by the graph (its ``assistant_id`` and ``graph_id``), with no
config; it cannot be changed (409). An assistant's config is checked against its graph's
config schema, and a refusal is a 422 naming the path at fault
(``config.configurable.user``). Every operation goes through ``durable.engine``; this
module only reads models.

Every answer under the API's root is JSON (its docs page aside). Errors are
``{"detail": message, "field": name}`` (``field`` is ``null`` when no single input is at
fault; a path such as ``metadata.team`` or ``ids.0`` names a part of one): 400 for a body
that is not JSON or has an object with a key twice (``field`` names the key), 413 for a
body over the size limit, 415 for a body not sent as ``application/json``, 404 for an
unknown thread, run or assistant, or for a path that is no route of this API, 405 (with
``Allow``) for a method a route does not take, 409 when the thread or run is in the wrong
state for the request (a busy thread under ``reject``, a run that already ended, an
``assistant_id`` that exists already, a graph's default assistant to change), 422 for
any other input that is not acceptable (a body that is not a JSON object, ``true`` for a
number), 500 for a failure of the server, 503 with ``Retry-After`` (seconds) when the
database failed under the request (a connection lost, the server restarting): a request
that only reads was tried again once on a new connection before that; one that writes
may or may not have been carried out (what it had not committed was undone), so look
before sending it again. A refused request changes nothing. A body must
be sent as ``application/json`` (415 otherwise), but a request with its key in
``x-api-key``, which no cross-site form can send, may send JSON under any Content-Type.
This document lists, for each operation, the refusals that apply to it and the body of
every answer.

Text must be text every database holds: a NUL character (``\\u0000``) or a lone UTF-16
surrogate (``\\ud800``...) anywhere in a body, a query parameter or a path, keys included,
is a 422 naming where it is. A ``thread_id`` is 1 to 255 characters, in a body or a path
(422 otherwise).

A run request takes the Agent Server's fields: ``config`` (its ``configurable`` keys,
``recursion_limit`` and ``tags`` reach the graph; the keys naming the thread, the
checkpoint and the run are the server's), ``context`` (LangGraph's runtime context),
``interrupt_before``/``interrupt_after`` (LangGraph's breakpoints: the run ends
``interrupted`` with the node next; a run with no input, or a ``command``, goes on),
``after_seconds`` (the run starts no earlier), ``webhook`` (the run's outcome is POSTed
there when it ends, to the hosts the server's operator allows; 422 otherwise),
``on_disconnect`` (``cancel``: a stream whose client goes away cancels the run; also
``cancel_on_disconnect`` when joining a stream), ``if_not_exists``, and
``stream_resumable``, ``checkpoint_during`` (deprecated: ``false`` is durability
``exit``) and ``feedback_keys`` (accepted). ``command`` takes ``resume``, ``goto`` (node
names or ``{"node", "input"}`` sends) and ``update``, beside an empty ``input``; a
``resume`` on a thread with next tasks but no interrupt goes to the next ``interrupt()``
that runs, and is refused only when nothing would run.

Beyond the Agent Server: ``GET /threads/{thread_id}/divergence?checkpoint_id=`` and
``GET /threads/{thread_id}/runs/{run_id}/divergence`` compare a replayed or forked branch
with the branch it left, step by step from the fork point (the nodes that ran, what each
wrote, the interrupts that fired), and name the first step where they differ.

Not served: thread TTLs, ``values`` filters on threads (refused with 422 naming the
field when sent).

Crons (``/runs/crons``, ``/threads/{thread_id}/runs/crons``) start runs on a schedule: a
five-field cron expression read in ``timezone`` (IANA, default UTC), until ``end_time``;
each fire starts the cron's run as ``POST /runs`` (or, on a thread, as
``POST /threads/{thread_id}/runs``) would, and the run's ``metadata`` is the cron's. A
slot fires at most once, and one missed while the scheduler was down is skipped. An
invalid ``schedule``, an unknown ``timezone``, an ``end_time`` in the past or an unknown
``assistant_id`` is a 422 naming it.

Stateless runs (``POST /runs``, ``/runs/wait``, ``/runs/stream``, ``/runs/batch``) each
run on a thread of their own, deleted once the run has ended unless ``on_completion`` is
``keep``. A run cancelled with ``action=interrupt`` reports status ``interrupted``, as the
Agent Server's does; with ``action=rollback`` it and its checkpoints are deleted.

Streams carry every stream mode of the Agent Server, in its event shapes: ``values``
(the whole state after each super-step), ``updates``, ``custom``, ``tasks``,
``messages-tuple`` (``event: messages``, ``[chunk, metadata]``), ``messages``
(``messages/metadata``, ``messages/partial``, ``messages/complete``), ``events``
(``astream_events`` v2 records), ``debug`` and ``checkpoints``; ``mode|ns`` for a
subgraph's with ``stream_subgraphs``. A run records the modes it was created with (a
background run's default: ``values``), and a join or a reconnect (``Last-Event-ID``)
replays them; a mode it did not record gives no events.

Every request carries a tenant's API token in the ``x-api-key`` header
(``langgraph-sdk``'s ``api_key``): 401 without a valid one; ``GET /info`` and
``GET /ok`` only, as on the Agent Server, answer without one (and say nothing of a
tenant). The token's tenant scopes
everything: another tenant's thread or run is a 404, and the store routes read and write
only under the tenant's own namespace prefix, which the client never sees. A viewer's
token reads; whatever would change a thread, a run or the store is a 403.
"""

# The docstring above is the API's published description (its OpenAPI document's), so it
# speaks to clients; the modules beside this one say what each part of the code does:
# errors (how the API answers and refuses), authentication (the token), access (what a
# token reaches), schemas (what a request sends), shapes (what an answer holds), and one
# router per resource: info, assistants, threads, state (and history), runs, the thread
# stream, stateless runs, crons, store.

from __future__ import annotations

from durable.api.assistants import assistants
from durable.api.authentication import TenantToken
from durable.api.crons import crons, thread_crons
from durable.api.divergence import divergence
from durable.api.drift import drift
from durable.api.errors import JSONOnlyAPI, handle_errors
from durable.api.info import info
from durable.api.runs import runs
from durable.api.schemas import JSONParser
from durable.api.state import state
from durable.api.stateless import stateless
from durable.api.store import store
from durable.api.thread_stream import thread_stream
from durable.api.threads import threads

__all__ = ["api"]

api = JSONOnlyAPI(
    title="Durable console API",
    version="1",
    description=__doc__,
    urls_namespace="api",
    parser=JSONParser(),
    auth=TenantToken(),
)
handle_errors(api)

# In this order: it is the OpenAPI document's, and that of the URL patterns, where
# /threads/search, /threads/count and /threads/prune come before /threads/{thread_id}, and
# /assistants/search and /assistants/count before /assistants/{assistant_id}.
api.add_router("", info)
api.add_router("/assistants", assistants)
api.add_router("/threads", threads)
api.add_router("/threads", state)
# Before runs: /threads/{thread_id}/runs/crons is no run's URL.
api.add_router("/threads", thread_crons)
api.add_router("/threads", runs)
api.add_router("/threads", thread_stream)
api.add_router("/threads", drift)
api.add_router("/threads", divergence)
api.add_router("/runs", crons)
api.add_router("/runs", stateless)
api.add_router("/store", store)
