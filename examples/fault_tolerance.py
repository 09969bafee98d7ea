"""Fault tolerance made visible: a retried flaky node, a timed-out node and its
compensation path.

- ``reserve_stock`` fails with ``ConnectionError`` on its first two attempts; its
  ``RetryPolicy`` runs it again, and each attempt reports itself on the ``custom`` stream
  (LangGraph streams only a task's final result, so the attempts would otherwise be
  invisible).
- ``quote_shipping`` waits ``supplier_delay`` seconds for a (pretend) supplier under a
  ``TimeoutPolicy`` of ``QUOTE_TIMEOUT`` seconds. Timeouts cancel through asyncio, so the
  node is async and the graph must run with ``astream``/``ainvoke``
  (``langgraph/types.py``, ``TimeoutPolicy``).
- When ``quote_shipping`` fails (its timeout included), its ``error_handler``
  ``release_stock`` undoes the reservation and routes to ``notify`` with a ``Command``:
  the compensation path (``langgraph/errors.py``, ``NodeError``).
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, NotRequired

from langgraph.errors import NodeError
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, RetryPolicy, TimeoutPolicy
from typing_extensions import TypedDict

QUOTE_TIMEOUT = 0.5  # seconds
FAILING_ATTEMPTS = 2

EXAMPLE_INPUT = {"order": "A-1042: 3 × blue mug", "supplier_delay": 2.0}


class Order(TypedDict):
    """The graph's input: an order, and how long the shipping supplier takes (seconds)."""

    order: str
    supplier_delay: float


class OrderState(Order):
    log: Annotated[list[str], operator.add]
    shipping: NotRequired[str]


def reserve_stock(state: OrderState, runtime: Runtime) -> dict:
    attempt = runtime.execution_info.node_attempt
    failing = attempt <= FAILING_ATTEMPTS
    runtime.stream_writer({"node": "reserve_stock", "attempt": attempt, "failed": failing})
    if failing:
        raise ConnectionError(f"inventory service unavailable (attempt {attempt})")
    return {"log": [f"stock reserved on attempt {attempt}"]}


async def quote_shipping(state: OrderState) -> dict:
    await asyncio.sleep(state["supplier_delay"])
    return {"shipping": "standard, 2 days", "log": ["shipping quoted"]}


def release_stock(state: OrderState, error: NodeError) -> Command:
    reason = f"{error.node} failed ({type(error.error).__name__})"
    return Command(update={"log": [f"stock released: {reason}"]}, goto="notify")


def notify(state: OrderState) -> dict:
    outcome = "confirmed" if state.get("shipping") else "cancelled"
    return {"log": [f"customer notified: order {outcome}"]}


def build_graph() -> StateGraph:
    builder = StateGraph(OrderState, input_schema=Order)
    builder.add_node(
        "reserve_stock",
        reserve_stock,
        retry_policy=RetryPolicy(
            max_attempts=FAILING_ATTEMPTS + 2, initial_interval=0.05, retry_on=ConnectionError
        ),
    )
    builder.add_node(
        "quote_shipping",
        quote_shipping,
        timeout=TimeoutPolicy(run_timeout=QUOTE_TIMEOUT),
        error_handler=release_stock,
    )
    builder.add_node("notify", notify)
    builder.add_edge(START, "reserve_stock")
    builder.add_edge("reserve_stock", "quote_shipping")
    builder.add_edge("quote_shipping", "notify")
    builder.add_edge("notify", END)
    return builder
