// The calls Agent Chat UI and agent-inbox make, through the JS SDK they use, as their
// sources make them (Agent Chat UI: src/providers/Stream.tsx, Thread.tsx,
// components/thread/index.tsx, agent-inbox/hooks/use-interrupted-actions.tsx; the SDK's
// useStream submit: dist/react/stream.lgp.js; agent-inbox:
// src/components/agent-inbox/contexts/ThreadContext.tsx, hooks/use-interrupted-actions.tsx).
// Asserted on by tests/worker/test_js_clients.py.
import { randomUUID } from "node:crypto";

import { client, collect, refusal, run } from "./lib.mjs";

// What Agent Chat UI's submit asks for: "values" from the page, "messages-tuple" because
// it reads the messages, "custom" for its onCustomEvent.
const CHAT_MODES = ["values", "messages-tuple", "custom"];
const EMAIL = { customer: "ada@example.com", question: "Can I change the address?" };

function human(content) {
  return { id: randomUUID(), type: "human", content };
}

// Agent Chat UI's `useStream().submit(values, options)` on a new thread: the SDK creates
// the thread, then streams the run (stream_resumable, so on_disconnect "continue").
async function submit(sdk, graph, values, options = {}) {
  const thread = await sdk.threads.create({});
  const created = [];
  const parts = await collect(
    sdk.runs.stream(thread.thread_id, graph, {
      input: values,
      streamMode: CHAT_MODES,
      streamSubgraphs: true,
      streamResumable: true,
      onDisconnect: "continue",
      onRunCreated: (meta) => created.push(meta),
      ...options,
    }),
  );
  return { thread_id: thread.thread_id, created, ...summary(parts) };
}

// What Agent Chat UI reads from a stream: the whole state of each "values" event and the
// tokens of "messages" events ([message chunk, metadata] pairs).
function summary(parts) {
  const tokens = parts
    .filter((p) => p.event === "messages" || p.event.startsWith("messages|"))
    .map((p) => ({ content: p.data[0]?.content, type: p.data[0]?.type, node: p.data[1]?.langgraph_node }));
  const values = parts.filter((p) => p.event === "values" || p.event.startsWith("values|"));
  return {
    events: [...new Set(parts.map((p) => p.event))],
    errors: parts.filter((p) => p.event === "error").map((p) => p.data),
    tokens,
    values_messages: values.map((p) => (p.data.messages ?? []).map((m) => m.type)),
    last_values: values.at(-1)?.data ?? null,
  };
}

// An email_reply thread stopped at its HumanInterrupt, as agent-inbox finds them.
async function emailAtInterrupt(sdk) {
  const { thread_id: tid } = await sdk.threads.create({});
  await sdk.runs.wait(tid, "email_reply", { input: EMAIL });
  return tid;
}

function inboxSearch(sdk) {
  // agent-inbox's fetchThreads for its "interrupted" inbox of graph email_reply.
  return sdk.threads.search({
    offset: 0,
    limit: 10,
    status: "interrupted",
    metadata: { graph_id: "email_reply" },
  });
}

await run({
  // On load: GET /info (a failure shows "Failed to connect"), then the history list.
  async chat_ui_load(sdk, { key }) {
    const info = await fetch(`${process.env.DURABLE_API_URL}/info`, {
      headers: { "X-Api-Key": key },
    });
    const threads = await sdk.threads.search({ metadata: { graph_id: "chat" }, limit: 100 });
    return { info_ok: info.ok, info_status: info.status, threads };
  },

  // Send a message: tokens arrive, "values" carry the whole messages list, the thread is
  // in the history list, and its history (fetchStateHistory) ends with the reply.
  async chat_ui_send(sdk) {
    const sent = await submit(sdk, "chat", { messages: [human("Hello there")] });
    const listed = await sdk.threads.search({ metadata: { graph_id: "chat" }, limit: 100 });
    const history = await sdk.threads.getHistory(sent.thread_id, { limit: 10 });
    return {
      ...sent,
      listed: listed.map((t) => t.thread_id),
      history_last_messages: (history[0]?.values?.messages ?? []).map((m) => [m.type, m.content]),
    };
  },

  // A reload while the reply streams: the page goes away after the run's metadata (the
  // run goes on: on_disconnect "continue"), and useStream joins the run again from its
  // first event (lastEventId "-1"), asking for no modes: the run's own are replayed.
  async chat_ui_reconnect(sdk) {
    const { thread_id: tid } = await sdk.threads.create({});
    const created = [];
    const page = new AbortController();
    const before = [];
    try {
      for await (const part of sdk.runs.stream(tid, "chat", {
        input: { messages: [human("Are you there?")] },
        streamMode: CHAT_MODES,
        streamSubgraphs: true,
        streamResumable: true,
        onDisconnect: "continue",
        signal: page.signal,
        onRunCreated: (meta) => created.push(meta),
      })) {
        before.push(part.event);
        if (part.event === "metadata") {
          page.abort();
          break;
        }
      }
    } catch (error) {
      if (!page.signal.aborted) throw error;
    }
    const [{ run_id: runId }] = created;
    const replayed = await collect(sdk.runs.joinStream(tid, runId, { lastEventId: "-1" }));
    const run = await sdk.runs.get(tid, runId);
    return { before, run_status: run.status, ...summary(replayed) };
  },

  // Its built-in /api passthrough forwards JSON bodies as text/plain.
  async chat_ui_passthrough(_, { key }) {
    const proxied = client(key, {
      onRequest: (url, init) => ({
        ...init,
        headers: { ...init.headers, "content-type": "text/plain;charset=UTF-8" },
      }),
    });
    const made = await refusal(proxied.threads.create({ metadata: { via: "proxy" } }));
    const found = await refusal(proxied.threads.search({ metadata: { via: "proxy" }, limit: 100 }));
    return { made, found };
  },

  // A HITLRequest: the card shows the request; Approve resumes with an empty input
  // beside the command, on_disconnect "cancel" (no resumable stream asked).
  async chat_ui_approve(sdk) {
    const asked = await submit(sdk, "approval_chat", {
      messages: [human("The office is closed on Friday.")],
    });
    const state = await sdk.threads.getState(asked.thread_id);
    const approved = await collect(
      sdk.runs.stream(asked.thread_id, "approval_chat", {
        input: {},
        command: { resume: { decisions: [{ type: "approve" }] } },
        streamMode: CHAT_MODES,
        streamSubgraphs: true,
        onDisconnect: "cancel",
      }),
    );
    const after = await sdk.threads.get(asked.thread_id);
    return {
      asked,
      interrupts: state.interrupts,
      approved: summary(approved),
      status: after.status,
      messages: (after.values?.messages ?? []).map((m) => [m.type, m.content]),
    };
  },

  // Edit and reject from the same card, each on a thread of its own.
  async chat_ui_edit_and_reject(sdk) {
    const decide = async (decision) => {
      const asked = await submit(sdk, "approval_chat", { messages: [human("Lunch at noon.")] });
      await collect(
        sdk.runs.stream(asked.thread_id, "approval_chat", {
          input: {},
          command: { resume: { decisions: [decision] } },
          streamMode: CHAT_MODES,
          streamSubgraphs: true,
          onDisconnect: "cancel",
        }),
      );
      const state = await sdk.threads.getState(asked.thread_id);
      return state.values.messages.map((m) => ({
        type: m.type,
        content: m.content,
        tool_calls: m.tool_calls ?? null,
        status: m.status ?? null,
      }));
    };
    const edited = { name: "post_announcement", args: { channel: "#office", text: "Lunch at one." } };
    return {
      edit: await decide({ type: "edit", edited_action: edited }),
      reject: await decide({ type: "reject", message: "Not this week." }),
    };
  },

  // "Mark as resolved" in Agent Chat UI's interrupt view: a command going to END.
  async chat_ui_resolve(sdk) {
    const asked = await submit(sdk, "approval_chat", { messages: [human("Resolve me.")] });
    const resolved = await collect(
      sdk.runs.stream(asked.thread_id, "approval_chat", {
        input: {},
        command: { goto: "__end__" },
        streamMode: CHAT_MODES,
        streamSubgraphs: true,
        onDisconnect: "cancel",
      }),
    );
    const after = await sdk.threads.get(asked.thread_id);
    return { resolved: summary(resolved), status: after.status, interrupts: after.interrupts };
  },

  // The inbox: interrupted threads of the graph, their HumanInterrupt read from the
  // thread itself (thread.interrupts).
  async inbox_list(sdk) {
    const waiting = [await emailAtInterrupt(sdk), await emailAtInterrupt(sdk)];
    await sdk.threads.create({ graphId: "email_reply" }); // idle: not in the inbox
    const found = await inboxSearch(sdk);
    return {
      waiting,
      found: found.map((t) => ({
        thread_id: t.thread_id,
        status: t.status,
        interrupts: Object.values(t.interrupts ?? {}),
      })),
    };
  },

  // Accept: a streamed resume in "events" mode, whose on_chain_start events name the
  // node that runs; then the thread read again.
  async inbox_accept(sdk) {
    const tid = await emailAtInterrupt(sdk);
    const parts = await collect(
      sdk.runs.stream(tid, "email_reply", {
        command: { resume: [{ type: "accept", args: null }] },
        streamMode: "events",
      }),
    );
    const nodes = parts
      .filter((p) => p.data?.event === "on_chain_start" && p.data?.metadata?.langgraph_node)
      .map((p) => p.data.metadata.langgraph_node);
    const thread = await sdk.threads.get(tid);
    return {
      events: [...new Set(parts.map((p) => p.event))],
      errors: parts.filter((p) => p.event === "error").map((p) => p.data),
      nodes: [...new Set(nodes)],
      status: thread.status,
      outcome: thread.values?.outcome ?? null,
    };
  },

  // Ignore: a background run resuming with [{type: "ignore"}]; the inbox is fetched again.
  async inbox_ignore(sdk) {
    const tid = await emailAtInterrupt(sdk);
    const resumed = await sdk.runs.create(tid, "email_reply", {
      command: { resume: [{ type: "ignore", args: null }] },
    });
    const out = await sdk.runs.join(tid, resumed.run_id);
    return {
      outcome: out.outcome ?? null,
      status: (await sdk.threads.get(tid)).status,
      inbox: (await inboxSearch(sdk)).map((t) => t.thread_id),
    };
  },

  // Mark as resolved (agent-inbox's ignoreThread): the state updated as END, no values.
  async inbox_resolve(sdk) {
    const tid = await emailAtInterrupt(sdk);
    const updated = await sdk.threads.updateState(tid, { values: null, asNode: "__end__" });
    const thread = await sdk.threads.get(tid);
    return {
      updated,
      status: thread.status,
      interrupts: thread.interrupts,
      next: (await sdk.threads.getState(tid)).next,
      inbox: (await inboxSearch(sdk)).map((t) => t.thread_id),
    };
  },
});
