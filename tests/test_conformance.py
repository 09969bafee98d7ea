"""LangGraph's checkpointer conformance suite against DjangoSaver.

Runs on whichever database ``DATABASE_URL`` names; ``make test`` runs the suite on SQLite
and on PostgreSQL.
"""

import asyncio

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES

from durable.checkpoint import DjangoSaver
from tests.conformance_facade import SyncPathFacade

pytestmark = pytest.mark.django_db(transaction=True)


def _run(name, make_saver):
    @checkpointer_test(name=name)
    async def registered():
        yield make_saver()

    return asyncio.run(validate(registered))


def _assert_base_capabilities_pass(report):
    for capability in BASE_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected, f"{capability.value} not implemented"
        assert result.passed, f"{capability.value}: {result.failures}"
        assert result.tests_passed > 0
    assert report.passed_all_base()


def test_async_methods_meet_base_contract():
    _assert_base_capabilities_pass(_run("DjangoSaver (async)", DjangoSaver))


def test_sync_methods_meet_base_contract():
    _assert_base_capabilities_pass(
        _run("DjangoSaver (sync path)", lambda: SyncPathFacade(DjangoSaver()))
    )
