"""Expense approval: validate a claim, ask a human, then pay or reject.

The approval request is shaped as LangChain v1's ``HITLRequest`` (the
``HumanInTheLoopMiddleware`` payload: ``action_requests`` and ``review_configs`` with
``allowed_decisions``), and the graph is resumed the way that middleware is:
``Command(resume={"decisions": [{"type": "approve"}]})``, or ``{"type": "reject",
"message": ...}``, or ``{"type": "edit", "edited_action": {"name", "args"}}``; an edited
claim is validated again before it is paid.
See https://docs.langchain.com/oss/python/langchain/human-in-the-loop.
"""

from __future__ import annotations

import hashlib
from typing import NotRequired

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

EXAMPLE_INPUT = {"employee": "Ada Lovelace", "amount": 120.5, "description": "Train to Leeds"}
APPROVAL_LIMIT = 10_000
CLAIM_SCHEMA = {
    "type": "object",
    "properties": {
        "employee": {"type": "string", "description": "Who is paid."},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "description": {"type": "string"},
    },
    "required": ["employee", "amount", "description"],
}


class ExpenseClaim(TypedDict):
    """The graph's input: what an employee claims."""

    employee: str
    amount: float
    description: str


class ExpenseState(ExpenseClaim):
    status: NotRequired[str]
    problems: NotRequired[list[str]]
    decision: NotRequired[dict]
    payment: NotRequired[dict]


def validate(state: ExpenseState) -> dict:
    problems = []
    if not str(state.get("employee", "")).strip():
        problems.append("employee is empty")
    amount = state.get("amount")
    if not isinstance(amount, (int, float)) or amount <= 0:
        problems.append("amount must be a positive number")
    elif amount > APPROVAL_LIMIT:
        problems.append(f"amount is over the limit of {APPROVAL_LIMIT}")
    return {"problems": problems, "status": "invalid" if problems else "validated"}


def after_validate(state: ExpenseState) -> str:
    if state["problems"]:
        return END
    # A claim the reviewer edited is validated again, then paid without a second ask.
    if state.get("decision", {}).get("type") == "edit":
        return "pay"
    return "request_approval"


def request_approval(state: ExpenseState) -> Command:
    args = {
        "employee": state["employee"],
        "amount": state["amount"],
        "description": state["description"],
    }
    response = interrupt(
        {
            "action_requests": [
                {
                    "name": "pay_expense",
                    "args": args,
                    "description": (
                        f"Pay {state['amount']:.2f} to {state['employee']} "
                        f"for \u201c{state['description']}\u201d?"
                    ),
                }
            ],
            "review_configs": [
                {
                    "action_name": "pay_expense",
                    "allowed_decisions": ["approve", "edit", "reject"],
                    # The arguments' JSON schema: the console builds its edit form
                    # from it, one input per argument.
                    "args_schema": CLAIM_SCHEMA,
                }
            ],
        }
    )
    decision = response["decisions"][0]
    if decision["type"] == "edit":
        edited = decision["edited_action"]["args"]
        claim = {key: edited[key] for key in ExpenseClaim.__annotations__ if key in edited}
        return Command(goto="validate", update={"decision": decision, **claim})
    if decision["type"] == "approve":
        return Command(goto="pay", update={"decision": decision})
    return Command(goto="reject", update={"decision": decision})


def pay(state: ExpenseState) -> dict:
    digest = hashlib.sha256(
        f"{state['employee']}|{state['amount']}|{state['description']}".encode()
    ).hexdigest()[:10]
    return {
        "status": "paid",
        "payment": {
            "payee": state["employee"],
            "amount": state["amount"],
            "reference": f"PAY-{digest.upper()}",
        },
    }


def reject(state: ExpenseState) -> dict:
    return {"status": "rejected"}


def build_graph() -> StateGraph:
    builder = StateGraph(ExpenseState, input_schema=ExpenseClaim)
    builder.add_node("validate", validate)
    builder.add_node(
        "request_approval", request_approval, destinations=("validate", "pay", "reject")
    )
    builder.add_node("pay", pay)
    builder.add_node("reject", reject)
    builder.add_edge(START, "validate")
    builder.add_conditional_edges("validate", after_validate, ["request_approval", "pay", END])
    builder.add_edge("pay", END)
    builder.add_edge("reject", END)
    return builder
