"""How the API answers in JSON, refusals above all: ``ApiError``, the exception handlers
that turn every failure into ``{"detail": message, "field": name}`` with its status, and
``JSONOnlyAPI``, the ``NinjaAPI`` that answers a path that is no route (404) and a method
a route does not take (405, with ``Allow``) in that JSON too."""

from __future__ import annotations

import functools
import logging

from asgiref.sync import iscoroutinefunction
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.urls import URLPattern, re_path, reverse
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.renderers import JSONRenderer

from durable import engine, request_faults
from durable.api.document import describe_refusals
from durable.db import is_fault
from durable.models import Run, Thread
from durable.redaction import redact

logger = logging.getLogger(__name__)


# The routes that describe a graph (its drawing, its JSON schemas) rather than carry
# values: a schema's property named ``api_key`` is no secret, and masking it would break
# the schema.
DESCRIBING_ROUTES = frozenset(
    {
        "get_assistant_graph",
        "get_assistant_schemas",
        "get_assistant_subgraphs",
        "get_assistant_subgraphs_at",
    }
)


class RedactingRenderer(JSONRenderer):
    """ninja's JSON renderer, every answer but a graph's description first passed
    through ``durable.redaction.redact``: no sensitive value of a state, a history, an
    interrupt, a run, a thread, an assistant or the store reaches a client."""

    def render(self, request, data, *, response_status):
        match = getattr(request, "resolver_match", None)
        if match is None or match.url_name not in DESCRIBING_ROUTES:
            data = redact(data)
        return super().render(request, data, response_status=response_status)


# One renderer for every JSON answer: the API's, for what routes return, and
# ``json_response``'s, for the answers routes and handlers build themselves.
RENDERER = RedactingRenderer()


class ApiError(Exception):
    """A refused request: HTTP ``status``, a message, and the input ``field`` at fault."""

    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


class BodyNotJSON(ValueError):
    """A request body that does not parse (``schemas.JSONParser``): ninja wraps it in an
    ``HttpError``, answered as a 400 with this message."""


class JSONOnlyAPI(NinjaAPI):
    """A ``NinjaAPI`` that answers in JSON where ninja and Django would send HTML or
    plain text: a path that is no route (Django's 404 page; the API's root too) and a
    method its route does not take (ninja's ``405 Method not allowed``)."""

    def __init__(self, **kwargs):
        super().__init__(renderer=RENDERER, **kwargs)

    @property
    def urls(self):
        patterns, app_name, namespace = super().urls
        routes = [_with_json_405(p) if isinstance(p, URLPattern) else p for p in patterns]
        # Last, so that it answers only what no route matched.
        routes.append(re_path(r"^.*$", _no_route, name="no-route"))
        return routes, app_name, namespace

    def get_openapi_schema(self, **kwargs):
        # Every operation's refusals, from what it takes (``document``), so that a route
        # lists only what it answers when it does not refuse.
        return describe_refusals(super().get_openapi_schema(**kwargs))

    def get_openapi_operation_id(self, operation) -> str:
        # The routes live in one module per resource; their ids stay those of the API
        # as a whole ("durable_api_<view>"), which clients generated from it call.
        return f"durable_api_{operation.view_func.__name__}"


def json_response(request, data, status: int = 200) -> HttpResponse:
    """``data`` as the API's JSON answer with ``status``, as ninja renders a route's."""
    return HttpResponse(
        RENDERER.render(request, data, response_status=status),
        status=status,
        content_type=f"{RENDERER.media_type}; charset={RENDERER.charset}",
    )


def error(request, status: int, message: str, field: str | None = None) -> HttpResponse:
    """The JSON answer of a refused request."""
    return json_response(request, {"detail": message, "field": field}, status)


def _with_json_405(pattern: URLPattern) -> URLPattern:
    view = pattern.callback
    if pattern.name == "api-root":  # ninja's root view raises Http404 for reverse()
        view = _no_route
    if iscoroutinefunction(view):

        async def answer(request, *args, **kwargs):
            return _json_405(request, await view(request, *args, **kwargs))

    else:

        def answer(request, *args, **kwargs):
            return _json_405(request, view(request, *args, **kwargs))

    functools.update_wrapper(answer, view)
    return URLPattern(pattern.pattern, answer, pattern.default_args, pattern.name)


def _json_405(request, response):
    if not isinstance(response, HttpResponseNotAllowed):
        return response
    allowed = ", ".join(sorted(m.strip() for m in response["Allow"].split(",")))
    answer = error(
        request, 405, f"{request.method} is not allowed on {request.path}; allowed: {allowed}."
    )
    answer["Allow"] = allowed
    return answer


@csrf_exempt
def _no_route(request, *args, **kwargs):
    docs = reverse("api:openapi-view")
    return error(
        request,
        404,
        f"{request.method} {request.path} is not a route of this API; its routes are "
        f"listed at {docs}.",
    )


# durable.engine names its inputs; the API's requests name some of them differently.
_API_FIELDS = {
    "thread": "thread_id",
    "name": "thread_id",
    "graph": "assistant_id",
    "resume": "command.resume",
    "answers": "command.resume",
    "goto": "command.goto",
    "update": "command.update",
    "filter": "metadata",
}


def _api_error(request, exc: ApiError):
    return error(request, exc.status, exc.message, exc.field)


def _unauthenticated(request, exc):
    return error(request, 401, "Send a valid API token in the x-api-key header.", "x-api-key")


def _invalid_request(request, exc: engine.InvalidRequest):
    """422 for unacceptable input; 409 when the thread or run is not in a state that
    allows the request (``durable.engine`` names ``thread`` or ``run`` then: a busy
    thread under ``reject``, a run that already ended, an assistant id the tenant already
    has; thread ids are checked in ``access``)."""
    status = 409 if exc.field in ("thread", "run", "assistant") else 422
    # A path below an input (``input.employee``) keeps its tail under the API's name.
    head, dot, tail = exc.field.partition(".")
    return error(request, status, exc.message, _API_FIELDS.get(head, head) + dot + tail)


def _unknown_assistant(request, exc: engine.UnknownAssistant):
    """An ``assistant_id`` the tenant has no assistant of: not found, as a thread is."""
    return error(request, 404, exc.message, "assistant_id")


def _too_large(request, exc):
    return error(request, 413, "The request body is too large.", "body")


def _http_error(request, exc: HttpError):
    if isinstance(exc.__cause__, BodyNotJSON):
        return error(request, 400, str(exc.__cause__), "body")
    if isinstance(exc.__cause__, ApiError):
        return _api_error(request, exc.__cause__)
    return error(request, exc.status_code, str(exc))


def _not_found(request, exc):
    return error(request, 404, "Not found.")


def _gone(request, exc):
    """A thread or run found when the request began and deleted by another before the
    engine locked it: it is not found now."""
    field = "run_id" if isinstance(exc, Run.DoesNotExist) else "thread_id"
    return error(request, 404, "Not found: it was deleted while this request ran.", field)


def unavailable(request, exc: BaseException) -> HttpResponse:
    """503 with ``Retry-After`` for a fault of the database (``durable.request_faults``),
    noted on the request so that the project's middleware may try a read again."""
    request_faults.note(request, exc)
    answer = error(request, 503, request_faults.describe(exc))
    answer["Retry-After"] = str(request_faults.RETRY_AFTER_SECONDS)
    return answer


def _server_error(request, exc: Exception):
    """Anything else is a failure of the server: logged, and a JSON 500 (ninja's
    default sends a plain-text traceback under DEBUG); a fault of the database itself
    (a connection lost, the server restarting) is a 503 (``unavailable``)."""
    if is_fault(exc):
        logger.warning("%s %s: database fault (%s)", request.method, request.path, exc)
        return unavailable(request, exc)
    logger.exception("%s %s failed", request.method, request.path, exc_info=exc)
    return error(request, 500, "Internal server error.")


def _validation_error(request, exc: ValidationError):
    first = exc.errors[0]
    # loc is ("body", "<parameter>", field...) or ("query", field) or ("path", field).
    loc = [str(p) for p in first["loc"]]
    parts = loc[2:] if loc[0] == "body" else loc[1:]
    field = ".".join(parts) or ("body" if loc[0] == "body" else None)
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "is not supported by this server"
    elif first["type"] == "missing" and loc[0] == "body" and len(loc) <= 2:
        return error(request, 422, "The request needs a JSON body.", "body")
    return error(request, 422, f"{field}: {message}." if field else f"{message}.", field)


_HANDLERS = {
    ApiError: _api_error,
    AuthenticationError: _unauthenticated,
    engine.InvalidRequest: _invalid_request,
    engine.UnknownAssistant: _unknown_assistant,
    RequestDataTooBig: _too_large,
    HttpError: _http_error,
    Http404: _not_found,
    Thread.DoesNotExist: _gone,
    Run.DoesNotExist: _gone,
    Exception: _server_error,
    ValidationError: _validation_error,
}


def handle_errors(api: NinjaAPI) -> None:
    """Answer every exception a route raises with ``error``: ``ApiError`` as it says,
    the engine's ``InvalidRequest`` as 422 (409 for a thread or run in the wrong state),
    ninja's validation and parse errors naming the field, a thread or run that another
    request deleted meanwhile as a 404, a fault of the database a 503, anything else a
    logged 500."""
    for exc_class, handler in _HANDLERS.items():
        api.add_exception_handler(exc_class, handler)
