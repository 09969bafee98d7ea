"""The serializer every DjangoSaver (and DjangoStore) uses unless given another.

- LangGraph's ``JsonPlusSerializer`` (ormsgpack), never pickle.
- Strict msgpack: a stored payload can only revive classes on an allowlist: LangGraph's
  safe types, LangChain's messages, the types reachable from the state, input, output,
  context and node schemas and channels of every graph in ``settings.DURABLE_GRAPHS``
  (computed as ``StateGraph.compile`` does in strict mode), and the dotted names in
  ``settings.DURABLE_SERDE_ALLOWLIST``. Anything else comes back as plain data instead
  of being imported and instantiated; the console reads stored state, and must not run
  whatever class a payload names.
- A graph compiled with a ``DjangoSaver`` outside ``DURABLE_GRAPHS`` (a user's own)
  gets its own schema types back too: ``compile()`` hands the saver a copy of its
  serializer with them added (``learn_schema_types_at_compile``).
- With ``settings.DURABLE_ENCRYPTION_KEY`` set (16, 24 or 32 characters), values are
  encrypted with AES (EAX) through LangGraph's ``EncryptedSerializer``; a wrong key makes
  reads fail with ``ValueError: MAC check failed``. Metadata is not serialized here: it
  stays plain JSON so it can be filtered.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from langgraph._internal import _serde as langgraph_serde
from langgraph._internal._serde import build_serde_allowlist  # what compile() uses
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from durable import conf

_allowlists: dict[tuple, frozenset] = {}


def default_serde() -> SerializerProtocol:
    """A strict, allowlisted ``JsonPlusSerializer``, encrypted when a key is set."""
    serde: SerializerProtocol = JsonPlusSerializer(allowed_msgpack_modules=allowlist())
    if key := conf.DURABLE_ENCRYPTION_KEY:
        if len(key.encode()) not in (16, 24, 32):
            raise ImproperlyConfigured(
                "DURABLE_ENCRYPTION_KEY must be 16, 24 or 32 bytes long "
                f"(an AES-128, -192 or -256 key); it is {len(key.encode())}."
            )
        serde = EncryptedSerializer.from_pycryptodome_aes(serde, key=key.encode())
    return serde


def allowlist() -> frozenset[tuple[str, ...]]:
    """The (module, name) pairs a stored payload may revive; see the module docstring."""
    graphs = tuple(sorted(conf.DURABLE_GRAPHS.items()))
    extra = tuple(conf.DURABLE_SERDE_ALLOWLIST)
    key = (graphs, extra)
    if key not in _allowlists:
        names = set()
        for _, path in graphs:
            names |= _graph_types(import_string(path)())
        for dotted in extra:
            module, _, name = dotted.rpartition(".")
            names.add((module, name))
        _allowlists[key] = frozenset(names)
    return _allowlists[key]


def _graph_types(builder) -> set[tuple[str, ...]]:
    schemas = [
        builder.state_schema,
        builder.input_schema,
        builder.output_schema,
        builder.context_schema,
        *(node.input_schema for node in builder.nodes.values()),
        *(
            branch.input_schema
            for branches in builder.branches.values()
            for branch in branches.values()
        ),
    ]
    return build_serde_allowlist(schemas=schemas, channels=builder.channels)


def learn_schema_types_at_compile() -> None:
    """Have LangGraph add a graph's schema types to its saver's allowlist whenever it
    compiles one, as it does only under ``LANGGRAPH_STRICT_MSGPACK=true``.

    ``StateGraph.compile`` (``langgraph/graph/state.py``), ``@entrypoint``
    (``langgraph/func``) and each run or state read (``Pregel._resolve_checkpointer``,
    ``langgraph/pregel/main.py``) compute the types reachable from the graph's schemas
    and channels (``build_serde_allowlist``) and call ``checkpointer.with_allowlist``,
    but only when ``langgraph._internal._serde.STRICT_MSGPACK_ENABLED``, which they read
    at each call, is true. That flag alone is set here, not the one that makes every
    ``JsonPlusSerializer`` strict by default (``langgraph.checkpoint.serde._msgpack``):
    a saver whose serializer revives anything (``InMemorySaver``'s default) is left as it
    is (``with_msgpack_allowlist`` returns it unchanged), while a ``DjangoSaver``, strict
    always, gets a copy whose allowlist also holds the graph's own types, as a saver
    does in LangGraph's strict mode. Called once, when Django's apps are ready, so before
    any ``DjangoSaver`` can exist."""
    langgraph_serde.STRICT_MSGPACK_ENABLED = True
