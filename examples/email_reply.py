"""Email reply: draft an answer to a customer, then ask a human through agent-inbox's
``HumanInterrupt`` before sending it.

The request follows agent-inbox's schema (``langgraph.prebuilt.interrupt``): an
``action_request`` (``action``, ``args``), a ``config`` saying which responses are
allowed (``allow_accept``, ``allow_edit``, ``allow_respond``, ``allow_ignore``) and a
markdown ``description``. As agent-inbox expects, the graph passes a list holding one
request to ``interrupt()`` and is resumed with a list holding one ``HumanResponse``
``{"type", "args"}``:

- ``accept`` (``args``: the action request as it was): the draft is sent;
- ``edit`` (``args``: ``{"action", "args"}`` with the edited email): the edited email
  is sent;
- ``response`` (``args``: text): the text is feedback, the draft is written again with
  it and the human is asked again;
- ``ignore`` (``args``: ``None``): nothing is sent.

See https://github.com/langchain-ai/agent-inbox (README, "Interrupts").
"""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

EXAMPLE_INPUT = {
    "customer": "ada@example.com",
    "question": "Can I change the delivery address of order A-1042?",
}
ACTION = "send_email"


class Inquiry(TypedDict):
    """The graph's input: who wrote, and what they asked."""

    customer: str
    question: str


class ReplyState(Inquiry):
    draft: NotRequired[dict]
    feedback: Annotated[list[str], operator.add]
    sent: NotRequired[dict]
    outcome: NotRequired[str]


def draft_reply(state: ReplyState) -> dict:
    body = "Hello,\n\nYes: reply with the new address and we will update the order before it ships."
    for note in state.get("feedback", []):
        body += f"\n\n{note}"
    subject = f"Re: {state['question'][:60]}"
    return {"draft": {"to": state["customer"], "subject": subject, "body": body + "\n"}}


def review(state: ReplyState) -> Command:
    draft = state["draft"]
    request = {
        "action_request": {"action": ACTION, "args": draft},
        "config": {
            "allow_accept": True,
            "allow_edit": True,
            "allow_respond": True,
            "allow_ignore": True,
        },
        "description": (
            f"## Reply to {draft['to']}\n\n"
            f"The customer asked:\n\n> {state['question']}\n\n"
            "**Accept** sends the draft, **edit** sends your version, a **response** "
            "is feedback for a new draft, **ignore** sends nothing."
        ),
    }
    [response] = interrupt([request])
    kind, args = response.get("type"), response.get("args")
    if kind == "accept":
        return Command(goto="send", update={"sent": draft})
    if kind == "edit":
        edited = args.get("args") if isinstance(args, dict) else None
        return Command(goto="send", update={"sent": {**draft, **(edited or {})}})
    if kind == "response":
        return Command(goto="draft_reply", update={"feedback": [str(args)]})
    return Command(goto=END, update={"outcome": "ignored"})


def send(state: ReplyState) -> dict:
    return {"outcome": f"sent to {state['sent']['to']}"}


def build_graph() -> StateGraph:
    builder = StateGraph(ReplyState, input_schema=Inquiry)
    builder.add_node("draft_reply", draft_reply)
    builder.add_node("review", review, destinations=("send", "draft_reply", END))
    builder.add_node("send", send)
    builder.add_edge(START, "draft_reply")
    builder.add_edge("draft_reply", "review")
    builder.add_edge("send", END)
    return builder
