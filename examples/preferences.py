"""Preferences: long-term memory across threads, through LangGraph's store.

A user says once which language they prefer (``{"user_id": "ada", "language": "fr"}``);
every later thread greets them in it (``{"user_id": "ada"}`` → ``"Bonjour, ada."``).
``remember`` puts the preference in the store, ``greet`` reads it back: a thread's
state ends with its thread, the store's items stay.

The store is the thread's tenant's (``durable.graphs.thread_graph``): the items sit
under the namespace ``("users", <user_id>)`` inside the tenant's prefix, so another
tenant's threads with the same user id never see them, and the API's ``/store`` routes
show each tenant its own. The nodes reach the store both ways LangGraph offers: the
``runtime`` argument (``runtime.store``) and ``get_store()``.
"""

from __future__ import annotations

from typing import NotRequired

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

EXAMPLE_INPUT = {"user_id": "ada", "language": "fr"}
GREETINGS = {"en": "Hello", "fr": "Bonjour", "de": "Hallo", "es": "Hola"}
DEFAULT = "en"
KEY = "preferences"


class Visitor(TypedDict):
    """The graph's input: who it is, and the language they now prefer, if they say."""

    user_id: str
    language: NotRequired[str]


class GreetingState(Visitor):
    greeting: NotRequired[str]


def namespace(user_id: str) -> tuple[str, ...]:
    return ("users", user_id)


def remember(state: GreetingState, runtime: Runtime) -> dict:
    if language := state.get("language"):
        runtime.store.put(namespace(state["user_id"]), KEY, {"language": language})
    return {}


def greet(state: GreetingState) -> dict:
    item = get_store().get(namespace(state["user_id"]), KEY)
    language = item.value["language"] if item else DEFAULT
    hello = GREETINGS.get(language, GREETINGS[DEFAULT])
    return {"language": language, "greeting": f"{hello}, {state['user_id']}."}


def build_graph() -> StateGraph:
    builder = StateGraph(GreetingState, input_schema=Visitor)
    builder.add_node("remember", remember)
    builder.add_node("greet", greet)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "greet")
    builder.add_edge("greet", END)
    return builder
