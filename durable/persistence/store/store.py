"""LangGraph's long-term memory store over a Django table: ``DjangoStore``.

The contract is ``langgraph.store.base.BaseStore`` (``langgraph/store/base/__init__.py``);
``InMemoryStore`` (``langgraph/store/memory``) and ``PostgresStore``
(``langgraph/store/postgres/base.py``) are the reference behaviours. Rows are
``durable.models.StoreItem``. A batch's ops are checked first (``checks``); search
filters and namespace prefixes compile in ``filters``.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from contextlib import nullcontext
from datetime import datetime, timedelta
from functools import cache, cached_property
from itertools import islice
from typing import Any

from django.db import DatabaseError, connections, transaction
from django.db.models import F, FloatField, Func, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from durable import db as sql
from durable.metrics import process as metrics
from durable.models import StoreItem
from durable.persistence.serde import default_serde
from durable.persistence.store.checks import checked
from durable.persistence.store.filters import (
    NamespacePrefix,
    filter_sql,
    match_pattern,
    matches,
    prefix_sql,
    sql_filter,
)


class CodePoints(Func):
    """A text column compared by code point: ``COLLATE "C"`` on PostgreSQL (SQLite's
    default, binary, order already is)."""

    def as_sql(self, compiler, connection, **extra):
        return compiler.compile(self.source_expressions[0])

    def as_postgresql(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.source_expressions[0])
        return f'{sql} COLLATE "C"', params


# Search order without a query, and the tie order of equal scores with one: newest
# first, then key and namespace by code point, the same on SQLite and PostgreSQL (and
# there cheaper than the database collation: benchmarks/NOTES.md). _order_sql is the
# same as SQL.
ORDER = (F("updated_at").desc(), CodePoints("key").asc(), CodePoints("namespace").asc())
# The columns a put writes; an update keeps namespace, key and created_at.
_WRITTEN = (
    "namespace",
    "key",
    "value",
    "type",
    "blob",
    "vectors",
    "created_at",
    "updated_at",
    "expires_at",
    "ttl_minutes",
)
# Qualified: SQLite's json_each(value) would read its own "value" column.
_VALUE_COLUMN = f'"{StoreItem._meta.db_table}"."value"'
_NAMESPACE_COLUMN = f'"{StoreItem._meta.db_table}"."namespace"'

Vectors = dict[str, list[float]]


class DjangoStore(BaseStore):
    """A ``BaseStore`` keeping items in the ``StoreItem`` table.

    Args:
        using: the Django database alias (default ``"default"``).
        index: LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``, default
            ``["$"]``, the whole value) to enable semantic search; ``embed`` is anything
            ``ensure_embeddings`` accepts.
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes, fractions allowed) and
            ``refresh_on_read`` (default True). ``sweep_interval_minutes`` and
            ``omit_expired`` are not used: expired items are never returned, and
            ``sweep_ttl()`` is meant for a scheduled job.
        serde: serializer for values when they are encrypted; default
            ``durable.persistence.serde.default_serde()``.

    Values are a JSON column, so search filters run in SQL, unless ``serde`` is an
    ``EncryptedSerializer`` (``DURABLE_ENCRYPTION_KEY`` set): then each value and its
    embeddings are serialized and encrypted into a binary column, and ``filter`` is applied
    in Python to the rows left after the namespace prefix, so a filtered search reads and
    decrypts the whole prefix until it has ``offset + limit`` matches. Namespaces, keys and
    timestamps are never encrypted.

    Batches (``batch``/``abatch``): results come in op order; every read sees the store as
    it was before the batch's puts, and of several puts to one item the last wins, as in
    ``InMemoryStore`` and ``PostgresStore``. The batch is one transaction. Bad input
    (a negative ``limit``/``offset``, an unknown filter operator, ...) raises ``ValueError``
    naming the field before anything is read or written.

    Search without ``query`` orders by ``updated_at`` descending, then key. With ``query``
    and an index, items are ranked by cosine similarity (the best of their vectors,
    ``SearchItem.score``) among those the prefix and filter leave, in SQL with pgvector
    or in Python (``vector_backend`` says which); items without vectors follow, unscored.
    """

    supports_ttl = True

    def __init__(
        self,
        *,
        using: str = "default",
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        serde: SerializerProtocol | None = None,
    ):
        self.using = using
        self.ttl_config = ttl
        self.serde = serde or default_serde()
        self.encrypted = isinstance(self.serde, EncryptedSerializer)
        self.index_config = index
        self.embeddings = ensure_embeddings(index.get("embed")) if index else None
        self._fields = [_path(p) for p in (index.get("fields") or ["$"])] if index else []

    @cached_property
    def vector_backend(self) -> str:
        """Where searches with a ``query`` are ranked: ``"pgvector"`` (in SQL, by pgvector's
        cosine distance ``<=>``) on PostgreSQL when the ``vector`` extension is installed
        or can be created (``CREATE EXTENSION vector``), unless values are encrypted (the
        database cannot read encrypted vectors); otherwise ``"python"``. Both rank the
        same items in the same order; pgvector computes in single precision, so scores
        agree with Python's to about 6 decimal places."""
        if self.encrypted or connections[self.using].vendor != "postgresql":
            return "python"
        return "pgvector" if _pgvector_installed(self.using) else "python"

    # -- batches ------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in one transaction and return one result per op, in order: an
        ``Item`` or None for a ``GetOp``, ``list[SearchItem]`` for a ``SearchOp``,
        ``list[tuple[str, ...]]`` for a ``ListNamespacesOp``, None for a ``PutOp``.

        Raises ``InvalidNamespaceError`` (a ``ValueError``) for a bad namespace and
        ``ValueError`` for other bad input, before any work; see the class docstring."""
        ops = checked(ops)
        docs, queries = self._to_embed(ops)
        embed = self.embeddings
        doc_vectors = embed.embed_documents(docs) if docs else []
        query_vectors = [embed.embed_query(q) for q in queries]
        return self._execute(
            ops, self._vectors(docs, doc_vectors), self._vectors(queries, query_vectors)
        )

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` for async code: embeddings through the async API, then the database
        work in a thread (``asyncio.to_thread``), so the event loop is never blocked."""
        ops = checked(ops)
        docs, queries = self._to_embed(ops)
        embed = self.embeddings
        doc_vectors = await embed.aembed_documents(docs) if docs else []
        query_vectors = await asyncio.gather(*(embed.aembed_query(q) for q in queries))
        return await asyncio.to_thread(
            self._execute,
            ops,
            self._vectors(docs, doc_vectors),
            self._vectors(queries, query_vectors),
        )

    def _execute(self, ops: list[Op], docs: Vectors, queries: Vectors) -> list[Result]:
        with metrics.STORE_OPERATION_SECONDS.labels(_operation(ops)).time():
            return self._execute_timed(ops, docs, queries)

    def _execute_timed(self, ops: list[Op], docs: Vectors, queries: Vectors) -> list[Result]:
        results: list[Result] = [None] * len(ops)
        puts = _last_puts(ops)
        atomic = (
            transaction.atomic(using=self.using) if self._transacted(ops, puts) else nullcontext()
        )
        with self._db(), atomic:
            now = timezone.now()
            self._get([(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)], now, results)
            for i, op in enumerate(ops):
                if isinstance(op, SearchOp) and self._in_sql(op):
                    results[i] = self._find(op, now)
                elif isinstance(op, SearchOp):
                    results[i] = self._search(op, now, queries)
                elif isinstance(op, ListNamespacesOp):
                    results[i] = self._list_namespaces(op, now)
            if puts:
                self._put(puts, now, docs)
        return results

    def _transacted(self, ops: list[Op], puts: list[PutOp]) -> bool:
        """Whether a batch runs in a transaction: when it writes (its reads see the store
        as it was before its puts, its writes land together). A batch that only reads is
        spared BEGIN and COMMIT, and so is one that is a single statement, atomic on its
        own: on PostgreSQL, a batch of puts that all write a value (one upsert)."""
        if not puts:
            return False
        upserts_only = all(isinstance(op, PutOp) for op in ops) and all(
            op.value is not None for op in puts
        )
        return not (upserts_only and self._postgresql)

    # -- TTL ----------------------------------------------------------------------

    def sweep_ttl(self, batch_size: int = 1000) -> int:
        """Delete expired items, ``batch_size`` rows per statement (each its own
        transaction), and return how many were deleted. Raises ``ValueError`` when
        ``batch_size`` is below 1."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        expired = self._rows().filter(expires_at__lte=timezone.now())
        deleted = 0
        with self._db():
            while pks := list(expired.values_list("pk", flat=True)[:batch_size]):
                deleted += expired.filter(pk__in=pks).delete()[0]
        return deleted

    async def asweep_ttl(self, batch_size: int = 1000) -> int:
        """``sweep_ttl`` in a thread."""
        return await asyncio.to_thread(self.sweep_ttl, batch_size)

    # -- reads --------------------------------------------------------------------

    def _get(self, gets: list[tuple[int, GetOp]], now: datetime, results: list) -> None:
        by_namespace: dict[tuple[str, ...], list[tuple[int, GetOp]]] = defaultdict(list)
        for i, op in gets:
            by_namespace[op.namespace].append((i, op))
        for namespace, entries in by_namespace.items():
            keys = sorted({op.key for _, op in entries})
            marks = ", ".join(["%s"] * len(keys))
            found = sql.select(
                self.using,
                StoreItem,
                f"namespace = %s AND key IN ({marks}) AND (expires_at IS NULL OR expires_at > %s)",
                [_text(namespace), *keys, _db_datetime(self.using, now)],
            )
            rows = {row.key: row for row in found}
            refresh = {op.key for _, op in entries if op.refresh_ttl}
            self._refresh([row for key, row in rows.items() if key in refresh], now)
            for i, op in entries:
                row = rows.get(op.key)
                results[i] = Item(**self._fields_of(row)) if row else None

    def _search(self, op: SearchOp, now: datetime, queries: Vectors) -> list[SearchItem]:
        rows = self._live(now).filter(self._prefix(op.namespace_prefix)).order_by(*ORDER)
        if op.filter and not self.encrypted:
            rows = rows.filter(*sql_filter(op.filter))
        python_filter = op.filter if self.encrypted else None
        page: list[tuple[float | None, StoreItem]]
        if op.query and self.embeddings and self.vector_backend == "pgvector":
            ranked = self._rank_in_sql(rows, queries[op.query])
            page = [(row.score, row) for row in ranked[op.offset : op.offset + op.limit]]
        elif op.query and self.embeddings:
            page = self._rank(rows, queries[op.query], python_filter)
            page = page[op.offset : op.offset + op.limit]
        else:  # a filter on encrypted values (_in_sql sends the other searches to _find)
            kept = (row for row in rows.iterator() if matches(self._decode(row)[0], python_filter))
            page = [(None, row) for row in islice(kept, op.offset, op.offset + op.limit)]
        if op.refresh_ttl:
            self._refresh([row for _, row in page], now)
        return [SearchItem(**self._fields_of(row), score=score) for score, row in page]

    def _rank(
        self, rows: QuerySet, query: list[float], python_filter: dict | None
    ) -> list[tuple[float | None, StoreItem]]:
        """All ``rows`` passing ``python_filter``: those with vectors by best cosine
        similarity to ``query`` (ties keep ``ORDER``), then the others, unscored."""
        scored, unscored = [], []
        for row in rows.iterator():
            value, vectors = self._decode(row)
            if python_filter and not matches(value, python_filter):
                continue
            if vectors:
                scored.append((max(_cosine(query, v) for v in vectors), row))
            else:
                unscored.append((None, row))
        scored.sort(key=lambda pair: -pair[0])
        return scored + unscored

    def _rank_in_sql(self, rows: QuerySet, query: list[float]) -> QuerySet:
        """``rows`` with pgvector's best cosine similarity of their vectors to ``query``
        as ``score``, best first (ties keep ``ORDER``), unscored rows last. The stored
        vectors are JSON arrays, which is also pgvector's text format for a ``vector``."""
        table = connections[self.using].ops.quote_name(StoreItem._meta.db_table)
        # pgvector's distance to a zero vector is NaN, which PostgreSQL sorts above every
        # number; Python's cosine calls it 0, and so does this.
        score = RawSQL(
            "SELECT max(CASE WHEN d = 'NaN' THEN 0 ELSE 1 - d END) FROM"
            f" (SELECT v::text::vector <=> %s::vector AS d"
            f" FROM jsonb_array_elements({table}.vectors) AS v) AS distances",
            [json.dumps(query)],
            output_field=FloatField(),
        )
        return rows.annotate(score=score).order_by(F("score").desc(nulls_last=True), *ORDER)

    def _in_sql(self, op: SearchOp) -> bool:
        """Whether ``op`` is answered by SQL alone (``_find``): it is not ranked (no
        ``query``, or no index) and its filter, if any, is not on encrypted values."""
        return not (op.query and self.embeddings) and not (op.filter and self.encrypted)

    def _find(self, op: SearchOp, now: datetime) -> list[SearchItem]:
        """``op`` as one hand-written statement (``sql.select``: the ORM's compiler costs
        more than the query): live rows in the prefix that pass the filter, in
        ``ORDER``, paged. ``vectors`` and ``expires_at`` are not read (deferred)."""
        vendor = connections[self.using].vendor
        conditions = []
        if op.namespace_prefix:
            conditions.append(prefix_sql(vendor, _NAMESPACE_COLUMN, _text(op.namespace_prefix)))
        if op.filter:
            conditions.append(filter_sql(vendor, _VALUE_COLUMN, op.filter))
        # Last, so PostgreSQL tests it only on rows the filter keeps: expires_at comes
        # late in the row, and reaching it on every row of the prefix costs (NOTES.md).
        conditions.append(
            ("(expires_at IS NULL OR expires_at > %s)", [_db_datetime(self.using, now)])
        )
        where = " AND ".join(condition for condition, _ in conditions)
        params = [param for _, condition_params in conditions for param in condition_params]
        rows = sql.select(
            self.using,
            StoreItem,
            f"{where} ORDER BY {_order_sql(vendor)} LIMIT %s OFFSET %s",
            [*params, op.limit, op.offset],
            defer=["vectors", "expires_at"],
        )
        if op.refresh_ttl:
            self._refresh(rows, now)
        return [SearchItem(**self._fields_of(row)) for row in rows]

    def _list_namespaces(self, op: ListNamespacesOp, now: datetime) -> list[tuple[str, ...]]:
        """Distinct live namespaces matching every condition, truncated to ``max_depth``,
        sorted as tuples (as ``InMemoryStore`` does; the joined text sorts differently
        when a label holds a character below ``"."``), then paged. This reads every
        distinct namespace that matches the conditions."""
        rows = self._live(now)
        for condition in op.match_conditions or ():
            if condition.path:  # an empty path constrains nothing (as in PostgresStore)
                rows = rows.filter(namespace__regex=match_pattern(condition))
        texts = rows.values_list("namespace", flat=True).distinct()
        namespaces = {_namespace(text)[: op.max_depth] for text in texts}
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # -- writes -------------------------------------------------------------------

    def _put(self, puts: list[PutOp], now: datetime, docs: Vectors) -> None:
        """Delete what ``value=None`` deletes, then upsert the rest. An expired row that
        is written again comes back as a new item: the upsert resets its ``created_at``."""
        by_namespace: dict[str, list[str]] = defaultdict(list)
        for op in puts:
            if op.value is None:
                by_namespace[_text(op.namespace)].append(op.key)
        for namespace, keys in by_namespace.items():
            self._rows().filter(namespace=namespace, key__in=keys).delete()
        rows = [self._row(op, now, docs) for op in puts if op.value is not None]
        if not rows:
            return
        table = connections[self.using].ops.quote_name(StoreItem._meta.db_table)
        conflict = {
            "update": [name for name in _WRITTEN if name not in ("namespace", "key", "created_at")],
            "expressions": {
                "created_at": f"CASE WHEN {table}.expires_at <= EXCLUDED.updated_at"
                f" THEN EXCLUDED.created_at ELSE {table}.created_at END"
            },
        }
        with sql.cursor(self.using) as cursor:
            if self._postgresql:  # one statement, whatever the number of rows
                cursor.execute(*sql.upsert_columns(self.using, StoreItem, rows, **conflict))
            else:  # SQLite runs in this process: a statement per row costs no round trip
                cursor.executemany(*sql.upsert_each(self.using, StoreItem, rows, **conflict))

    def _row(self, op: PutOp, now: datetime, docs: Vectors) -> dict[str, Any]:
        """The ``_WRITTEN`` columns of the row a put writes."""
        value = dict(op.value)
        vectors = [docs[text] for text in self._texts(op)] or None
        row = {
            "namespace": _text(op.namespace),
            "key": op.key,
            "value": None,
            "type": "",
            "blob": None,
            "vectors": None,
            "created_at": now,
            "updated_at": now,
            "expires_at": None if op.ttl is None else now + timedelta(minutes=op.ttl),
            "ttl_minutes": None if op.ttl is None else float(op.ttl),
        }
        if self.encrypted:
            row["type"], row["blob"] = self.serde.dumps_typed({"value": value, "vectors": vectors})
        else:
            row["value"], row["vectors"] = value, vectors
        return row

    def _refresh(self, rows: list[StoreItem], now: datetime) -> None:
        """Move the expiry of ``rows`` that have a TTL to now + their TTL."""
        rows = [row for row in rows if row.ttl_minutes is not None]
        for row in rows:
            row.expires_at = now + timedelta(minutes=row.ttl_minutes)
        if rows:
            self._rows().bulk_update(rows, ["expires_at"])

    # -- embeddings ---------------------------------------------------------------

    def _texts(self, op: PutOp) -> list[str]:
        """The texts to embed for a put: the configured fields, or ``op.index``."""
        if not self.embeddings or op.value is None or op.index is False:
            return []
        paths = self._fields if op.index is None else [_path(p) for p in op.index]
        return [text for path in paths for text in get_text_at_path(op.value, path)]

    def _to_embed(self, ops: list[Op]) -> tuple[list[str], list[str]]:
        """Distinct document texts of the batch's effective puts, and distinct queries."""
        if not self.embeddings:
            return [], []
        docs = {text: None for op in _last_puts(ops) for text in self._texts(op)}
        queries = {op.query: None for op in ops if isinstance(op, SearchOp) and op.query}
        return list(docs), list(queries)

    def _vectors(self, texts: list[str], vectors: list[list[float]]) -> Vectors:
        dims = self.index_config.get("dims") if self.index_config else None
        for vector in vectors:
            if dims and len(vector) != dims:
                raise ValueError(
                    f"embedding has {len(vector)} dimensions; IndexConfig.dims is {dims}"
                )
        return dict(zip(texts, (list(map(float, v)) for v in vectors), strict=True))

    # -- rows -----------------------------------------------------------------------

    def _rows(self) -> QuerySet:
        return StoreItem.objects.using(self.using)

    def _live(self, now: datetime) -> QuerySet:
        """Rows that have not expired at ``now``."""
        return self._rows().filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))

    def _prefix(self, prefix: tuple[str, ...]) -> Q:
        """Rows in namespace ``prefix`` or below it, matched label by label."""
        return Q(NamespacePrefix(_text(prefix))) if prefix else Q()

    def _decode(self, row: StoreItem) -> tuple[dict, list | None]:
        """(value, vectors) of a row, decrypted when stored encrypted."""
        if row.blob is None:
            return row.value, row.vectors
        payload = self.serde.loads_typed((row.type, bytes(row.blob)))
        return payload["value"], payload["vectors"]

    def _fields_of(self, row: StoreItem) -> dict[str, Any]:
        """``Item`` fields of ``row``; ``vectors`` and ``expires_at`` are not touched
        (``_find`` defers them)."""
        return {
            "namespace": _namespace(row.namespace),
            "key": row.key,
            "value": row.value if row.blob is None else self._decode(row)[0],
            "created_at": row.created_at,
            "updated_at": row.updated_at,
        }

    def _db(self):
        return sql.connection_as_found(self.using)

    @property
    def _postgresql(self) -> bool:
        return connections[self.using].vendor == "postgresql"


def _order_sql(vendor: str) -> str:
    """``ORDER`` as SQL text."""
    collate = ' COLLATE "C"' if vendor == "postgresql" else ""
    return f"updated_at DESC, key{collate}, namespace{collate}"


# -- small helpers ----------------------------------------------------------------------


_OPERATIONS = {GetOp: "get", SearchOp: "search", PutOp: "put", ListNamespacesOp: "list_namespaces"}


def _operation(ops: list[Op]) -> str:
    """The ``operation`` label of a batch: its ops' one kind, or ``mixed``."""
    kinds = {_OPERATIONS.get(type(op), "other") for op in ops}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def _last_puts(ops: list[Op]) -> list[PutOp]:
    """The batch's puts, one per item: the last one wins."""
    return list({(op.namespace, op.key): op for op in ops if isinstance(op, PutOp)}.values())


def _path(path: str) -> str | list[str]:
    """A field path as ``get_text_at_path`` takes it (``"$"``, the whole value, stays)."""
    return path if path == "$" else tokenize_path(path)


def _db_datetime(using: str, value: datetime):
    """``value`` as a query parameter, as the ORM would send it (SQLite stores text)."""
    return connections[using].ops.adapt_datetimefield_value(value)


def _text(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def _namespace(text: str) -> tuple[str, ...]:
    return tuple(text.split("."))


@cache
def _pgvector_installed(using: str) -> bool:
    """Whether ``using``'s database has pgvector's ``vector`` type, creating the extension
    when it can. Asked once per process and alias."""
    connection = connections[using]
    with sql.connection_as_found(using), connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        if cursor.fetchone():
            return True
        try:
            with transaction.atomic(using=using):
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except DatabaseError:  # not installed on the server, or not allowed to create it
            return False
    return True


def _cosine(a: list[float], b: list[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=False)) / norm if norm else 0.0
