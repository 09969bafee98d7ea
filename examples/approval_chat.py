"""Approval chat: a chat assistant that proposes a tool call and asks a human to review it
through LangChain v1's ``HITLRequest`` before running it, as Agent Chat UI renders it
(its approve / edit / reject card under the assistant's message).

The graph does by hand what LangChain's ``HumanInTheLoopMiddleware``
(``langchain.agents.middleware.human_in_the_loop``) does after a model call:

1. ``agent`` asks a chat model. After a human message it proposes one
   ``post_announcement`` tool call (``channel``, ``text``: the human's words); after a
   tool's answer it writes the final reply, streamed token by token.
2. ``review`` interrupts with ``{"action_requests": [{"name", "args", "description"}],
   "review_configs": [{"action_name", "allowed_decisions": ["approve", "edit",
   "reject"]}]}`` and is resumed with ``{"decisions": [decision]}``, one per request:

   - ``{"type": "approve"}``: the tool runs with the proposed arguments;
   - ``{"type": "edit", "edited_action": {"name", "args"}}``: the assistant's message is
     replaced by one calling the tool with the edited arguments, and the tool runs;
   - ``{"type": "reject", "message": ...}``: the tool does not run; an error
     ``ToolMessage`` carries the reason, and the model answers it.
3. ``tools`` runs the call and appends its ``ToolMessage``; then back to ``agent``.

The models are langchain_core's fake chat models, so the graph needs no network:
``FakeMessagesListChatModel`` for the proposal (it keeps ``tool_calls``, which
``GenericFakeChatModel`` drops when it streams) and ``GenericFakeChatModel`` for the
reply, which streams one token per word to LangGraph's ``messages`` stream mode.
See https://docs.langchain.com/oss/python/langchain/human-in-the-loop.
"""

from __future__ import annotations

import uuid

from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

TOOL = "post_announcement"
CHANNEL = "#general"
EXAMPLE_INPUT = {"messages": [{"type": "human", "content": "The office is closed on Friday."}]}
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "channel": {"type": "string", "description": "Where the announcement is posted."},
        "text": {"type": "string"},
    },
    "required": ["channel", "text"],
}


def post_announcement(channel: str, text: str) -> str:
    """The tool under review: what a real one would post, said back."""
    return f"Posted to {channel}: {text}"


def _proposal(request: str) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {
                "name": TOOL,
                "args": {"channel": CHANNEL, "text": request},
                "id": f"call_{uuid.uuid4().hex[:12]}",
            }
        ],
    )


def _reply(result: ToolMessage) -> str:
    if result.status == "error":
        return f"I did not post it. {result.content}"
    return f"Done. {result.content}"


def agent(state: MessagesState) -> dict:
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        # A model made for this call, so the graph compiled once serves every thread.
        model = GenericFakeChatModel(messages=iter([_reply(last)]))
    else:
        request = last.text if isinstance(last, HumanMessage) else str(last.content)
        model = FakeMessagesListChatModel(responses=[_proposal(request)])
    return {"messages": [model.invoke(state["messages"])]}


def after_agent(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "review" if isinstance(last, AIMessage) and last.tool_calls else END


def review(state: MessagesState) -> Command:
    proposal = state["messages"][-1]
    [call] = proposal.tool_calls
    response = interrupt(
        {
            "action_requests": [
                {
                    "name": call["name"],
                    "args": call["args"],
                    "description": (
                        "Tool execution requires approval\n\n"
                        f"Tool: {call['name']}\nArgs: {call['args']}"
                    ),
                }
            ],
            "review_configs": [
                {
                    "action_name": call["name"],
                    "allowed_decisions": ["approve", "edit", "reject"],
                    "args_schema": ARGS_SCHEMA,
                }
            ],
        }
    )
    [decision] = response["decisions"]
    if decision["type"] == "approve":
        return Command(goto="tools")
    if decision["type"] == "edit":
        edited = decision["edited_action"]
        # Same message id: MessagesState's reducer replaces the proposal in place.
        revised = AIMessage(
            content=proposal.content,
            id=proposal.id,
            tool_calls=[{"name": edited["name"], "args": edited["args"], "id": call["id"]}],
        )
        return Command(goto="tools", update={"messages": [revised]})
    reason = decision.get("message") or (
        f"User rejected the tool call for `{call['name']}` with id {call['id']}"
    )
    refusal = ToolMessage(
        content=reason, name=call["name"], tool_call_id=call["id"], status="error"
    )
    return Command(goto="agent", update={"messages": [refusal]})


def tools(state: MessagesState) -> dict:
    [call] = state["messages"][-1].tool_calls
    if call["name"] != TOOL:
        result = ToolMessage(
            content=f"Unknown tool {call['name']!r}",
            name=call["name"],
            tool_call_id=call["id"],
            status="error",
        )
    else:
        args = call["args"]
        content = post_announcement(str(args.get("channel", CHANNEL)), str(args.get("text", "")))
        result = ToolMessage(content=content, name=TOOL, tool_call_id=call["id"])
    return {"messages": [result]}


def build_graph() -> StateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("review", review, destinations=("tools", "agent"))
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", after_agent, ["review", END])
    builder.add_edge("tools", "agent")
    return builder
