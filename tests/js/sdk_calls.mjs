// The JS SDK's calls of threads, runs, state, history, the store and assistants, each
// scenario on a tenant of its own (see lib.mjs). Asserted on by tests/worker/test_js_sdk.py.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { collect, refusal, run, withProbe } from "./lib.mjs";

const EXPENSE = { employee: "Grace Hopper", amount: 42.5, description: "Compiler manual" };
const APPROVE = { decisions: [{ type: "approve" }] };

await run({
  async threads(sdk) {
    const made = await sdk.threads.create({
      metadata: { customer: "acme" },
      graphId: "expense_approval",
    });
    const other = await sdk.threads.create({ threadId: "order-7", metadata: { customer: "globex" } });
    const again = await sdk.threads.create({ threadId: "order-7", ifExists: "do_nothing" });
    const got = await sdk.threads.get(made.thread_id);
    const updated = await sdk.threads.update(made.thread_id, { metadata: { tier: 2 } });
    const found = await sdk.threads.search({ metadata: { customer: "acme" } });
    const byGraph = await sdk.threads.search({ metadata: { graph_id: "expense_approval" } });
    const counted = await sdk.threads.count({ metadata: { customer: "globex" } });
    await sdk.threads.delete(other.thread_id);
    return {
      made,
      again_id: again.thread_id,
      got,
      updated_metadata: updated.metadata,
      found_ids: found.map((t) => t.thread_id),
      by_graph_ids: byGraph.map((t) => t.thread_id),
      counted,
      state: await sdk.threads.getState(made.thread_id),
      history: await sdk.threads.getHistory(made.thread_id),
      deleted: await refusal(sdk.threads.get(other.thread_id)),
    };
  },

  async runs_and_state(sdk) {
    const { thread_id: tid } = await sdk.threads.create();
    const created = [];
    const asked = await sdk.runs.wait(tid, "expense_approval", {
      input: EXPENSE,
      onRunCreated: (meta) => created.push(meta),
    });
    const atInterrupt = await sdk.threads.getState(tid);
    const thread = await sdk.threads.get(tid);
    const paid = await sdk.runs.wait(tid, "expense_approval", { command: { resume: APPROVE } });
    const history = await sdk.threads.getHistory(tid, { limit: 100 });
    const runs = await sdk.runs.list(tid);
    const first = await sdk.runs.get(tid, created[0].run_id);
    const validated = history.find((s) => s.next.includes("request_approval"));
    const fork = await sdk.threads.updateState(tid, {
      values: { decision: { type: "reject", message: "over budget" } },
      asNode: "request_approval",
      checkpoint: validated.checkpoint,
    });
    return {
      created,
      asked,
      at_interrupt: atInterrupt,
      thread_status: thread.status,
      thread_interrupts: thread.interrupts,
      paid,
      history_steps: history.map((s) => s.metadata.step),
      history_next: history.map((s) => s.next),
      runs: runs.map((r) => ({ run_id: r.run_id, status: r.status, kind: r.kind })),
      first,
      fork,
      forked_state: await sdk.threads.getState(tid, fork.checkpoint),
      by_checkpoint_id: await sdk.threads.getState(tid, validated.checkpoint.checkpoint_id),
      second_resume: await refusal(
        sdk.runs.create(tid, "expense_approval", { command: { resume: APPROVE } }),
      ),
    };
  },

  async background_stream_and_join(sdk) {
    const { thread_id: tid } = await sdk.threads.create();
    const created = [];
    const run = await sdk.runs.create(tid, "expense_approval", {
      input: EXPENSE,
      onRunCreated: (meta) => created.push(meta),
    });
    const joined = await sdk.runs.join(tid, run.run_id);
    const streamed = [];
    const parts = await collect(
      sdk.runs.stream(tid, "expense_approval", {
        command: { resume: APPROVE },
        streamMode: ["updates", "values"],
        onRunCreated: (meta) => streamed.push(meta),
      }),
    );
    const replay = await collect(
      sdk.runs.joinStream(tid, streamed[0].run_id, { streamMode: "updates" }),
    );
    return { run, created, joined, parts, streamed, replay };
  },

  // A run held open by the probe graph's slow node (tests/helpers/graphs.py) until
  // DURABLE_JS_TMP/cancel/release exists; a run queued behind it is cancelled at once.
  async cancel(sdk) {
    return withProbe(sdk, "cancel", async ({ tid, running, input, release }) => {
      const busy = await sdk.threads.get(tid);
      const refused = await refusal(sdk.runs.create(tid, "probe", { input }));
      const queued = await sdk.runs.create(tid, "probe", { input, multitaskStrategy: "enqueue" });
      await sdk.runs.cancel(tid, queued.run_id, true);
      const cancelled = await sdk.runs.get(tid, queued.run_id);
      release();
      const out = await sdk.runs.join(tid, running.run_id);
      return {
        busy_status: busy.status,
        refused,
        cancelled_status: cancelled.status,
        out,
        fast_started: readFileSync(join(input.dir, "fast"), "utf8").split("\n").filter(Boolean)
          .length,
        thread_status: (await sdk.threads.get(tid)).status,
      };
    });
  },

  async store(sdk) {
    await sdk.store.putItem(["users", "ada"], "prefs", { language: "fr" });
    await sdk.store.putItem(["users", "bob"], "prefs", { language: "de" });
    const item = await sdk.store.getItem(["users", "ada"], "prefs");
    const searched = await sdk.store.searchItems(["users"], { filter: { language: "de" } });
    const namespaces = await sdk.store.listNamespaces({ prefix: ["users"] });
    await sdk.store.deleteItem(["users", "bob"], "prefs");
    const left = await sdk.store.searchItems(["users"]);
    return { item, searched, namespaces, left };
  },

  // examples/approval_chat.py through runs.wait: a HITLRequest, then each decision.
  async approval_chat(sdk) {
    const ask = async (decision) => {
      const { thread_id: tid } = await sdk.threads.create();
      const asked = await sdk.runs.wait(tid, "approval_chat", {
        input: { messages: [{ type: "human", content: "Lunch at noon." }] },
      });
      const done = await sdk.runs.wait(tid, "approval_chat", {
        command: { resume: { decisions: [decision] } },
      });
      const messages = done.messages.map((m) => ({
        type: m.type,
        content: m.content,
        tool_calls: (m.tool_calls ?? []).map((c) => ({ name: c.name, args: c.args })),
        status: m.status ?? null,
      }));
      return { request: asked.__interrupt__?.[0]?.value ?? null, messages };
    };
    const edited = { name: "post_announcement", args: { channel: "#office", text: "Lunch at one." } };
    return {
      approve: await ask({ type: "approve" }),
      edit: await ask({ type: "edit", edited_action: edited }),
      reject: await ask({ type: "reject", message: "Not this week." }),
    };
  },

  async assistants(sdk) {
    return {
      got: await sdk.assistants.get("expense_approval"),
      search: await sdk.assistants.search({ limit: 100 }),
      by_graph: await sdk.assistants.search({ graphId: "email_reply" }),
      missing: await refusal(sdk.assistants.get("nope")),
    };
  },

  async stored_assistants(sdk) {
    const made = await sdk.assistants.create({
      graphId: "options",
      config: { configurable: { x: 1 }, tags: ["t-a"] },
      context: { user: "ann" },
      metadata: { team: "ops" },
      name: "Ann",
    });
    const id = made.assistant_id;
    const updated = await sdk.assistants.update(id, { config: { configurable: { x: 2 } } });
    const versions = await sdk.assistants.getVersions(id);
    const { thread_id: tid } = await sdk.threads.create();
    const ran = await sdk.runs.wait(tid, id, { input: {}, context: { user: "bob" } });
    const runs = await sdk.runs.list(tid);
    const latest = await sdk.assistants.setLatest(id, 1);
    const again = await sdk.assistants.create({ graphId: "chat", assistantId: id, ifExists: "do_nothing" });
    return {
      made,
      got: await sdk.assistants.get(id),
      updated,
      versions: versions.map((v) => [v.version, v.config]),
      ran_log: ran.log,
      run_assistant: [runs[0].assistant_id, runs[0].assistant_version],
      latest,
      again_name: again.name,
      search: (await sdk.assistants.search({ metadata: { team: "ops" }, sortBy: "name", sortOrder: "asc" })).map((a) => a.assistant_id),
      counted: await sdk.assistants.count({ graphId: "options" }),
      schemas_graph: (await sdk.assistants.getSchemas(id)).graph_id,
      graph_nodes: (await sdk.assistants.getGraph(id)).nodes.map((n) => n.id),
      subgraphs: await sdk.assistants.getSubgraphs(id),
      duplicate: await refusal(sdk.assistants.create({ graphId: "options", assistantId: id })),
      unknown_graph: await refusal(sdk.assistants.create({ graphId: "nope" })),
      bad_config: await refusal(sdk.assistants.update(id, { config: { configurable: { user: 7 } } })),
      deleted: await sdk.assistants.delete(id),
      gone: await refusal(sdk.assistants.get(id)),
    };
  },
});
