"""``/info`` and ``/ok``: what the server is and whether it is up. The Agent Server
serves both outside its authenticated routes (``langgraph_api/api/__init__.py``: meta
routes), and Agent Chat UI calls ``/info`` before it has a key to check the URL, so
neither asks for a token; neither says anything about a tenant."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from django.db import connection
from ninja import Field, Query, Router, Schema

from durable.api import answers
from durable.api.errors import ApiError

info = Router(tags=["system"])


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


class OkQuery(Schema):
    check_db: int = Field(0, ge=0, le=1)


@info.get("/info", summary="Server information", auth=None, response=answers.ServerInfo)
def server_info(request):
    """``{"version", "langgraph_py_version", "flags", "metadata"}`` as the Agent
    Server's ``ServerInfo``: this server's version, LangGraph's, and the features
    served: assistants (the registered graphs) and crons (``/runs/crons``), as the
    Agent Server's ``meta_info`` says them; no LangSmith tracing."""
    return {
        "version": _version("langgraph-durable-console"),
        "langgraph_py_version": _version("langgraph"),
        "flags": {"assistants": True, "crons": True, "langsmith": False},
        "metadata": {},
    }


@info.get("/ok", summary="Health check", auth=None, response=answers.Ok)
def health(request, query: Query[OkQuery]):
    """``{"ok": true}``; with ``check_db=1``, only once the database answers (500
    otherwise)."""
    if query.check_db:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        except Exception:  # noqa: BLE001  (any failure of the database is "not ok")
            raise ApiError(500, "The database does not answer.") from None
    return {"ok": True}
