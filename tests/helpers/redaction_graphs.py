"""A graph whose state holds sensitive values, for the redaction tests
(``DURABLE_REDACT_PATHS`` in ``tests/settings.py``; the key-name patterns are the
defaults).

``redaction``: ``collect`` writes a card number (``payment.card_number``, masked by
path), an ``api_key`` (masked by key name) and an AI message whose
``additional_kwargs.api_key`` is a secret, and logs what it wrote; ``ask`` stops at an
interrupt whose payload carries a ``token``; ``done`` records the answer. Every secret
contains ``MARKER``, so a test searches any text for it.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict

MARKER = "S3CR3T"
CARD = f"4111-{MARKER}-CARD"
API_KEY = f"sk-{MARKER}-KEY"
MESSAGE_KEY = f"sk-{MARKER}-MSG"
INTERRUPT_TOKEN = f"tok-{MARKER}-ASK"
SECRETS = (CARD, API_KEY, MESSAGE_KEY, INTERRUPT_TOKEN)

logger = logging.getLogger(__name__)


class Sensitive(TypedDict, total=False):
    customer: str
    payment: dict
    api_key: str
    messages: Annotated[list, add_messages]
    answer: Any


def collect(state: Sensitive) -> dict:
    written = {
        "payment": {"card_number": CARD, "amount": 42},
        "api_key": API_KEY,
        "messages": [AIMessage("Charged.", id="m1", additional_kwargs={"api_key": MESSAGE_KEY})],
    }
    # What a careless node logs: the worker's log must not show it.
    logger.warning("collect wrote %s", {"payment": written["payment"], "api_key": API_KEY})
    return written


def ask(state: Sensitive) -> dict:
    answer = interrupt({"question": "Charge the card?", "token": INTERRUPT_TOKEN})
    return {"answer": answer}


def done(state: Sensitive) -> dict:
    return {}


def build_redaction() -> StateGraph:
    graph = StateGraph(Sensitive)
    graph.add_node("collect", collect)
    graph.add_node("ask", ask)
    graph.add_node("done", done)
    graph.add_edge(START, "collect")
    graph.add_edge("collect", "ask")
    graph.add_edge("ask", "done")
    graph.add_edge("done", END)
    return graph
