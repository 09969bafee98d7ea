"""A request whose database connection fails under it (``durable.db.is_fault``: the
connection terminated, the server restarting) never answers 500.

``DatabaseFaultMiddleware``, for the console and the API alike, sees the fault that the
layers below noted on the request (``durable.request_faults``: the API's exception
handler, the console's error pages, and Django's own handler for an error of a
middleware, the session's or the user's, through ``got_request_exception``). A read
(``GET``, ``HEAD``, ``OPTIONS``, and the API's ``POST`` routes that only read: search,
count, history) is tried again once, on a new connection, without the client knowing. A
write, or a read whose second try fails too, answers 503 with ``Retry-After``: the API's
JSON error, the console's page (``dashboard.errors.unavailable``). A write is not tried
again because a fault after its commit cannot be told from one before; what it had not
committed the fault rolled back.

Only the work before the response is returned is tried again: a stream (server-sent
events) that has started is sent as it is, and a fault in it ends the stream."""

from __future__ import annotations

import logging
import sys

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.core.signals import got_request_exception
from django.db import DEFAULT_DB_ALIAS
from django.http import HttpResponse

from dashboard.errors import API_PREFIX, unavailable
from durable import db, request_faults
from durable.api import document
from durable.api.errors import unavailable as api_unavailable

logger = logging.getLogger(__name__)


def _note_from_django(sender, request=None, **kwargs):
    """Django's handler signals an error no layer answered (a middleware's) while it
    handles it: note it if it is a fault of the database."""
    request_faults.note(request, sys.exc_info()[1])


got_request_exception.connect(_note_from_django, dispatch_uid="durable-request-faults")


def only_reads(request) -> bool:
    """Whether ``request`` changes nothing, so that it may be sent again: a safe method,
    or an API operation that only reads (``durable.api.document.only_reads``)."""
    if request.path.startswith(API_PREFIX):
        return document.only_reads(request.method, request.path)
    return request.method in document.SAFE_METHODS


def _answer(request, response: HttpResponse, fault: BaseException) -> HttpResponse:
    """The answer to a request that met ``fault``: ``response`` if it is no server error
    or the 503 of the layer that caught it, else the API's or the console's 503."""
    if response.status_code < 500 or response.status_code == 503:
        return response
    if request.path.startswith(API_PREFIX):
        return api_unavailable(request, fault)
    return unavailable(request, fault)


class DatabaseFaultMiddleware:
    """Sync and async; see the module's docstring. Second in ``MIDDLEWARE``, just inside
    CORS, so that a 503 carries the CORS headers a browser client needs to read it."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.async_mode:
            return self.__acall__(request)
        response = self.get_response(request)
        if self._again(request, response):
            db.replace_connection(DEFAULT_DB_ALIAS)
            response = self.get_response(request)
        return self._finish(request, response)

    async def __acall__(self, request):
        response = await self.get_response(request)
        if self._again(request, response):
            # On the request's own thread, where its connection lives.
            await sync_to_async(db.replace_connection)(DEFAULT_DB_ALIAS)
            response = await self.get_response(request)
        return self._finish(request, response)

    def _again(self, request, response) -> bool:
        fault = request_faults.noted(request)
        if fault is None or response.streaming or not only_reads(request):
            return False
        logger.warning(
            "%s %s: database fault (%s); trying it again on a new connection",
            request.method,
            request.path,
            fault,
        )
        request_faults.forget(request)
        return True

    def _finish(self, request, response):
        fault = request_faults.noted(request)
        if fault is None or response.streaming:
            return response
        return _answer(request, response, fault)
