"""LangGraph's checkpointer conformance suite against DjangoSaver.

Runs on whichever database ``DATABASE_URL`` names; ``make test`` runs the suite on SQLite
and on PostgreSQL.
"""

import asyncio

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from durable.persistence.checkpoint import DjangoSaver
from tests.helpers.conformance_facade import SyncPathFacade

pytestmark = pytest.mark.django_db(transaction=True)


def _run(name, make_saver):
    @checkpointer_test(name=name)
    async def registered():
        yield make_saver()

    return asyncio.run(validate(registered))


def _assert_every_capability_passes(report):
    for capability in ALL_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected, f"{capability.value} not implemented"
        assert result.passed, f"{capability.value}: {result.failures}"
    assert report.passed_all()
    # The whole suite ran: 81 tests in langgraph-checkpoint-conformance 0.0.2.
    assert sum(r.tests_passed for r in report.results.values()) == 81


def test_async_methods_meet_the_whole_contract():
    _assert_every_capability_passes(_run("DjangoSaver (async)", DjangoSaver))


def test_sync_methods_meet_the_whole_contract():
    _assert_every_capability_passes(
        _run("DjangoSaver (sync path)", lambda: SyncPathFacade(DjangoSaver()))
    )
