"""Parallel review: legal and finance review a document in the same super-step.

Both reviewer nodes call ``interrupt()``, so the run stops with two pending interrupts.
They are answered together, by interrupt id:
``Command(resume={legal_interrupt_id: {...}, finance_interrupt_id: {...}})``
(LangGraph's resume map, langgraph#4406).
"""

from __future__ import annotations

import operator
from typing import Annotated, NotRequired

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

EXAMPLE_INPUT = {"document": "Supplier contract v3: 24 months, 2% late fee."}

# The answer each reviewer gives; the console builds its answer form from it (a yes/no
# choice and a comment box), so approving takes no hand-written JSON.
RESPONSE_SCHEMA = {
    "type": "object",
    "properties": {
        "approved": {
            "type": "boolean",
            "title": "Approve",
            "description": "Yes approves the document; no asks for changes.",
        },
        "comment": {
            "type": "string",
            "title": "Comment",
            "description": "What to change, or why (optional).",
            "maxLength": 2000,
        },
    },
    "required": ["approved"],
}


class ReviewRequest(TypedDict):
    """The graph's input: the document to review."""

    document: str


class ReviewState(ReviewRequest):
    reviews: Annotated[list[dict], operator.add]
    verdict: NotRequired[str]


def _review(reviewer: str, state: ReviewState) -> dict:
    answer = interrupt(
        {
            "reviewer": reviewer,
            "question": f"Does {reviewer} approve this document?",
            "document": state["document"],
            "response_schema": RESPONSE_SCHEMA,
        }
    )
    # Only a literal true approves: "false", "yes" or 1 are not a reviewer's approval.
    approved = isinstance(answer, dict) and answer.get("approved") is True
    comment = str(answer.get("comment", "")) if isinstance(answer, dict) else ""
    return {"reviews": [{"reviewer": reviewer, "approved": approved, "comment": comment}]}


def legal_review(state: ReviewState) -> dict:
    return _review("legal", state)


def finance_review(state: ReviewState) -> dict:
    return _review("finance", state)


def decide(state: ReviewState) -> dict:
    approved = all(review["approved"] for review in state["reviews"])
    return {"verdict": "approved" if approved else "changes requested"}


def build_graph() -> StateGraph:
    builder = StateGraph(ReviewState, input_schema=ReviewRequest)
    builder.add_node("legal_review", legal_review)
    builder.add_node("finance_review", finance_review)
    builder.add_node("decide", decide)
    builder.add_edge(START, "legal_review")
    builder.add_edge(START, "finance_review")
    builder.add_edge(["legal_review", "finance_review"], "decide")
    builder.add_edge("decide", END)
    return builder
