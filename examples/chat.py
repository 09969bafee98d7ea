"""Chat: a one-node chat graph for Agent Chat UI, with a model that needs no network.

The state is LangGraph's ``MessagesState``: a list of LangChain messages, to which each
node's messages are added (``add_messages``). The ``respond`` node answers the last
human message with langchain_core's ``GenericFakeChatModel``, which streams its reply
word by word, as a real chat model streams tokens: run it with the stream mode
``messages-tuple`` (LangGraph's ``messages``) and the tokens arrive one by one, with the
node that produced them in their metadata (``langgraph_node``).

Replace the model with any LangChain chat model (``init_chat_model("openai:gpt-4o")``)
and the graph, the stream and the UI stay the same.

Input, as Agent Chat UI sends it: ``{"messages": [{"type": "human", "content": "hi"}]}``.
"""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph

EXAMPLE_INPUT = {"messages": [{"type": "human", "content": "hi"}]}


def reply_to(text: str) -> str:
    """What the demo model says to ``text``."""
    return f"You said: {text}. I am a demo model without a network, so I repeat you."


def respond(state: MessagesState) -> dict:
    """Answer the last human message, streamed token by token by the chat model."""
    asked = next((m.text for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), "")
    model = GenericFakeChatModel(messages=iter([AIMessage(content=reply_to(asked))]))
    return {"messages": [model.invoke(state["messages"])]}


def build_graph() -> StateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    return builder
