// Agent Chat UI's edit of a sent message, through the JS SDK it is built on: its
// HumanMessage's handleSubmitEdit submits the edited message with the checkpoint before
// the one where the message was first seen (getMessagesMetadata's
// firstSeenState.parent_checkpoint), and useStream streams it on the thread
// (dist/react/stream.lgp.js, submitToThread: the checkpoint without its thread_id). What
// the UI then shows is what the SDK's own branching helpers make of the thread's history
// (dist/ui/branching.js: getBranchContext, getMessagesMetadataMap), fetched as useStream
// fetches it with fetchStateHistory: true (a history of 10 states).
// Asserted on by tests/worker/test_chat_edit.py.
import { randomUUID } from "node:crypto";

import { getBranchContext, getMessagesMetadataMap } from "@langchain/langgraph-sdk/ui";

import { collect, run, texts } from "./lib.mjs";

// What Agent Chat UI's submit asks for (tests/js/clients.mjs says why).
const CHAT_MODES = ["values", "messages-tuple", "custom"];
const HISTORY_LIMIT = 10; // useStream's fetchHistory when fetchStateHistory is true

const getMessages = (values) => values?.messages ?? [];

// useStream's submit on thread `tid`, with its options (`checkpoint` for an edit).
async function submit(sdk, tid, values, options = {}) {
  const parts = await collect(
    sdk.runs.stream(tid, "chat", {
      input: values,
      streamMode: CHAT_MODES,
      streamSubgraphs: true,
      streamResumable: true,
      onDisconnect: "continue",
      ...options,
    }),
  );
  const values_ = parts.filter((p) => p.event === "values");
  return {
    errors: parts.filter((p) => p.event === "error").map((p) => p.data),
    events: [...new Set(parts.map((p) => p.event))],
    last_values: texts(values_.at(-1)?.data?.messages),
  };
}

// What the page shows on `branch` ("" is the newest): its messages, and for each the
// branch switcher's options (undefined: no switcher).
function shown(history, branch = "") {
  const branchContext = getBranchContext(branch, history);
  const metadata = getMessagesMetadataMap({
    initialValues: {},
    history,
    getMessages,
    branchContext,
  });
  const messages = getMessages(branchContext.threadHead?.values);
  return {
    messages: texts(messages),
    metadata,
    switchers: metadata.map((m) => m.branchOptions ?? null),
  };
}

// A chat of two sent messages, then the edit of the `which`th human message (0 or 1).
async function editAfterTwo(sdk, which) {
  const { thread_id: tid } = await sdk.threads.create({});
  const sent = [];
  for (const content of ["First question", "Second question"]) {
    sent.push(await submit(sdk, tid, { messages: [{ id: randomUUID(), type: "human", content }] }));
  }
  const before = await sdk.threads.getHistory(tid, { limit: HISTORY_LIMIT });
  const page = shown(before);
  const humans = page.messages.flatMap(([type], i) => (type === "human" ? [i] : []));
  const index = humans[which];
  const parent = page.metadata[index].firstSeenState?.parent_checkpoint;
  if (parent == null) throw new Error("no parent checkpoint for the message to edit");
  const checkpoint = { ...parent };
  delete checkpoint.thread_id; // as useStream sends it
  // HumanMessage's handleSubmitEdit: a new message, no id.
  const edited = await submit(
    sdk,
    tid,
    { messages: [{ type: "human", content: `${page.messages[index][1]}, edited` }] },
    { checkpoint },
  );
  const state = await sdk.threads.getState(tid);
  const after = await sdk.threads.getHistory(tid, { limit: HISTORY_LIMIT });
  const now = shown(after);
  const everything = await sdk.threads.getHistory(tid, { limit: 100 });
  const leaves = everything.filter(
    (s) => !everything.some((o) => o.parent_checkpoint?.checkpoint_id === s.checkpoint.checkpoint_id),
  );
  // The switcher of the edited message, and the other branch it offers.
  const switcher = now.switchers.find((options) => options != null) ?? [];
  const other = switcher.find((b) => b !== now.metadata.find((m) => m.branchOptions)?.branch);
  return {
    sent,
    before: page.messages,
    sent_checkpoint: checkpoint,
    edited,
    state_messages: texts(state.values.messages),
    state_parent: state.parent_checkpoint?.checkpoint_id ?? null,
    history_count: after.length,
    shown: now.messages,
    switcher,
    other_branch: other == null ? null : shown(after, other).messages,
    leaves: leaves.map((s) => texts(s.values.messages)),
    branched_at: parent.checkpoint_id,
    children_of_parent: everything
      .filter((s) => s.parent_checkpoint?.checkpoint_id === parent.checkpoint_id)
      .map((s) => ({ source: s.metadata.source, messages: texts(s.values.messages) })),
  };
}

await run({
  chat_ui_edit_first: (sdk) => editAfterTwo(sdk, 0),
  chat_ui_edit_second: (sdk) => editAfterTwo(sdk, 1),
});
