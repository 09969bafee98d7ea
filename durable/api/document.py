"""The refusals in the API's OpenAPI document: every operation lists the error answers
that apply to it, each with the ``ErrorResponse`` body (``errors.error``), from what the
operation takes, so that a route added later has them with no list of its own.

Which apply (the API's description, ``durable/api/__init__.py``, says when each is sent):

- 401 (no valid token) and, for an operation that changes something, 403 (a viewer's
  token), on every operation that needs a token;
- 400 (not JSON, a key twice), 413 (too large) and 415 (not ``application/json``) on
  every operation that takes a body;
- 404 on every operation whose path names a thread, run, assistant or checkpoint, or
  whose body names an assistant or a thread (``assistant_id``, ``thread_id``);
- 409 on every operation that changes a thread or a run (a busy thread, an ended run);
- 422 on every operation that takes any input (path, query or body);
- 503 (with ``Retry-After``) on every operation that needs a token, which the database
  holds: the database failed under the request (a read is tried again first).

A refusal the rules do not foresee is declared by its route, in its ``openapi_extra``
(``refusal``), and gets its body here like the others."""

from __future__ import annotations

from http import HTTPStatus

from durable.api.answers import ErrorResponse

ERROR_REF = f"#/components/schemas/{ErrorResponse.__name__}"

# The 503's header: when to send the request again.
RETRY_AFTER = {
    "description": "Seconds to wait before sending the request again.",
    "schema": {"type": "integer"},
}
# The last path segment of a POST that only reads (a search, a count, a state at a
# checkpoint): such an operation changes nothing, so no 403 or 409.
READS = {"search", "count", "history", "checkpoint", "namespaces", "versions"}
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def only_reads(method: str, path: str) -> bool:
    """Whether the API operation ``method`` ``path`` changes nothing: a safe method, or a
    ``POST`` whose last path segment is one of ``READS``. Such an operation has no 403,
    and a request to it may be sent again after a database fault."""
    method = method.upper()
    return method in SAFE_METHODS or (
        method == "POST" and path.rstrip("/").rsplit("/", 1)[-1] in READS
    )


# Body fields naming something that may not exist: a 404 when it does not.
NAMED_IN_BODY = {"assistant_id", "thread_id"}
# Paths whose resources have no state to conflict with.
NO_CONFLICTS = ("/store/",)


def refusal(status: int, description: str) -> dict:
    """A route's ``openapi_extra`` for a refusal the rules here do not foresee."""
    return {"responses": {status: {"description": description}}}


def describe_refusals(document: dict) -> dict:
    """Give every operation of ``document`` (an OpenAPI dict, edited in place) its
    refusals, each with the ``ErrorResponse`` body, and add that component."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas[ErrorResponse.__name__] = ErrorResponse.model_json_schema(
        ref_template="#/components/schemas/{model}"
    )
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            declared = {int(s) for s in responses if str(s).isdigit() and int(s) >= 400}
            for status in sorted(declared | _refusals(path, method, operation, schemas)):
                answer = responses.pop(status, None) or responses.pop(str(status), None) or {}
                answer.setdefault("description", HTTPStatus(status).phrase)
                answer.setdefault("content", {"application/json": {"schema": {"$ref": ERROR_REF}}})
                if status == 503:
                    answer.setdefault("headers", {"Retry-After": RETRY_AFTER})
                responses[status] = answer
    return document


def _refusals(path: str, method: str, operation: dict, schemas: dict) -> set[int]:
    """The refusals the rules give the operation ``method`` ``path`` (``schemas``: the
    document's components, which its body may refer to)."""
    found: set[int] = set()
    body = operation.get("requestBody")
    parameters = operation.get("parameters") or []
    changes = not only_reads(method, path)
    if operation.get("security"):
        found |= {401, 503}
        if changes:
            found.add(403)
    if body:
        found |= {400, 413, 415}
    if parameters or body:
        found.add(422)
    if any(p.get("in") == "path" for p in parameters) or NAMED_IN_BODY & _fields(
        (body or {}).get("content", {}).get("application/json", {}).get("schema", {}), schemas
    ):
        found.add(404)
    if changes and not any(part in path for part in NO_CONFLICTS):
        found.add(409)
    return found


def _fields(schema: dict, schemas: dict) -> set[str]:
    """The top-level fields of an object ``schema`` (of each item, for an array: a
    batch), through ``$ref``, ``anyOf`` and ``allOf`` (ninja refers to a body's
    component, and an optional body is ``anyOf`` it and ``null``)."""
    if ref := schema.get("$ref"):
        return _fields(schemas.get(ref.rsplit("/", 1)[-1], {}), schemas)
    if schema.get("type") == "array":
        return _fields(schema.get("items", {}), schemas)
    found = set(schema.get("properties", {}))
    for part in schema.get("anyOf", []) + schema.get("allOf", []):
        found |= _fields(part, schemas)
    return found
