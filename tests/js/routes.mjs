// The JS SDK's calls of the Agent Server's routes beyond threads and runs of a thread:
// info, assistants' graphs and schemas, copies, state metadata, run deletes, stateless
// and batch runs, bulk cancel, a thread's stream, prune, rollback, and the answers the
// SDK types (a run's status, a missing store item, history before a RunnableConfig).
// Asserted on by tests/worker/test_js_routes.py.

import { collect, refusal, run, sleep, withProbe } from "./lib.mjs";

const EXPENSE = { employee: "Grace Hopper", amount: 42.5, description: "Compiler manual" };
const APPROVE = { decisions: [{ type: "approve" }] };

async function atInterrupt(sdk) {
  const { thread_id: tid } = await sdk.threads.create();
  await sdk.runs.wait(tid, "expense_approval", { input: EXPENSE });
  return tid;
}

await run({
  async info(_, { key }) {
    const ask = async (path) => {
      const res = await fetch(`${process.env.DURABLE_API_URL}${path}`, {
        headers: { "X-Api-Key": key },
      });
      return { status: res.status, body: await res.json().catch(() => null) };
    };
    return { info: await ask("/info"), ok: await ask("/ok") };
  },

  async assistant_graphs(sdk) {
    return {
      graph: await sdk.assistants.getGraph("expense_approval"),
      xray: await sdk.assistants.getGraph("nested", { xray: true }),
      schemas: await sdk.assistants.getSchemas("expense_approval"),
      subgraphs: await sdk.assistants.getSubgraphs("nested"),
      count: await sdk.assistants.count(),
      count_email: await sdk.assistants.count({ graphId: "email_reply" }),
    };
  },

  async copy_and_patch_state(sdk) {
    const tid = await atInterrupt(sdk);
    const copy = await sdk.threads.copy(tid);
    await sdk.threads.patchState(tid, { reviewed: true });
    const original = await sdk.threads.getState(tid);
    const copied = await sdk.threads.getState(copy.thread_id);
    const paid = await sdk.runs.wait(copy.thread_id, "expense_approval", {
      command: { resume: APPROVE },
    });
    return {
      copy_id: copy.thread_id,
      original_id: tid,
      original_values: original.values,
      original_metadata: original.metadata,
      copied_values: copied.values,
      copied_next: copied.next,
      paid_status: paid.status,
      original_after: (await sdk.threads.getState(tid)).values.status,
      thread: await sdk.threads.get(tid),
    };
  },

  async delete_run(sdk) {
    const tid = await atInterrupt(sdk);
    const [ended] = await sdk.runs.list(tid);
    await sdk.runs.delete(tid, ended.run_id);
    return {
      listed: (await sdk.runs.list(tid)).map((r) => r.run_id),
      got: await refusal(sdk.runs.get(tid, ended.run_id)),
    };
  },

  async stateless_runs(sdk) {
    const waited = await sdk.runs.wait(null, "expense_approval", { input: EXPENSE });
    const streamed = await collect(
      sdk.runs.stream(null, "expense_approval", { input: EXPENSE, streamMode: "updates" }),
    );
    const kept = await sdk.runs.create(null, "expense_approval", {
      input: EXPENSE,
      onCompletion: "keep",
    });
    const joined = await sdk.runs.join(kept.thread_id, kept.run_id);
    const batch = await sdk.runs.createBatch([
      { assistantId: "expense_approval", input: EXPENSE },
      { assistantId: "email_reply", input: { customer: "ada@example.com", question: "Hi?" } },
    ]);
    return {
      waited,
      streamed_events: streamed.map((p) => p.event),
      kept_thread: (await sdk.threads.get(kept.thread_id)).status,
      joined_status: joined.status,
      kept_id: kept.thread_id,
      batch: batch.map((r) => ({ assistant_id: r.assistant_id, thread_id: r.thread_id })),
      threads_left: (await sdk.threads.search({ limit: 100 })).map((t) => t.thread_id),
    };
  },

  // Bulk cancel (by thread and run ids, one of the two forms RunsCancel takes); a run cancelled with action=interrupt
  // reports the SDK's RunStatus ("interrupted"), which has no "cancelled".
  async cancel_many(sdk) {
    return withProbe(sdk, "cancel_many", async (probe) => {
      const queued = await sdk.runs.create(probe.tid, "probe", {
        input: probe.input,
        multitaskStrategy: "enqueue",
      });
      await sdk.runs.cancelMany({ threadId: probe.tid, runIds: [queued.run_id] });
      const cancelled = await sdk.runs.get(probe.tid, queued.run_id);
      probe.release();
      await sdk.runs.join(probe.tid, probe.running.run_id);
      return {
        cancelled_status: cancelled.status,
        running_status: (await sdk.runs.get(probe.tid, probe.running.run_id)).status,
      };
    });
  },

  // Rollback: the cancelled run and what it wrote are gone once it has stopped.
  async cancel_rollback(sdk) {
    return withProbe(sdk, "rollback", async (probe) => {
      await sdk.runs.cancel(probe.tid, probe.running.run_id, false, "rollback");
      probe.release();
      let got = await refusal(sdk.runs.get(probe.tid, probe.running.run_id));
      for (let i = 0; i < 600 && got.accepted; i++) {
        await sleep(50);
        got = await refusal(sdk.runs.get(probe.tid, probe.running.run_id));
      }
      return {
        got,
        runs: (await sdk.runs.list(probe.tid)).map((r) => r.run_id),
        values: (await sdk.threads.getState(probe.tid)).values,
      };
    });
  },

  // A thread's stream, joined while a run is active: the run's events arrive on it up
  // to its end. The run is let go only once the stream has begun (its first event), as a
  // thread's stream carries the runs active from when it is joined, not those before.
  async thread_stream(sdk) {
    return withProbe(sdk, "thread_stream", async (probe) => {
      const controller = new AbortController();
      const parts = [];
      let begun;
      const joined = new Promise((resolve) => (begun = resolve));
      let failed = null; // kept, not thrown, until the scenario awaits the reader
      const reading = (async () => {
        try {
          for await (const part of sdk.threads.joinStream(probe.tid, {
            signal: controller.signal,
          })) {
            parts.push({ event: part.event, data: part.data });
            begun();
            if (part.event.startsWith("values") && part.data?.log?.includes("after")) break;
          }
        } catch (error) {
          if (!controller.signal.aborted) failed = error;
        } finally {
          begun(); // a stream that failed or ended at once lets the run go too
        }
      })();
      await joined;
      probe.release();
      await sdk.runs.join(probe.tid, probe.running.run_id);
      await Promise.race([reading, sleep(30_000)]); // the stream stays open after the run
      controller.abort();
      await reading;
      if (failed) throw failed;
      return {
        run_id: probe.running.run_id,
        events: parts.map((p) => p.event),
        metadata: parts.filter((p) => p.event === "metadata").map((p) => p.data),
        values: parts.filter((p) => p.event.startsWith("values")).map((p) => p.data),
      };
    });
  },

  async prune(sdk) {
    const first = await atInterrupt(sdk);
    const second = await sdk.threads.create();
    const kept = await sdk.threads.create();
    const pruned = await sdk.threads.prune([first, second.thread_id]);
    return {
      pruned,
      first: await refusal(sdk.threads.get(first)),
      left: (await sdk.threads.search({ limit: 100 })).map((t) => t.thread_id),
      kept: kept.thread_id,
    };
  },

  async answers_as_typed(sdk) {
    const tid = await atInterrupt(sdk);
    await sdk.runs.wait(tid, "expense_approval", { command: { resume: APPROVE } });
    const history = await sdk.threads.getHistory(tid, { limit: 100 });
    const before = { configurable: { checkpoint_id: history[2].checkpoint.checkpoint_id } };
    const earlier = await sdk.threads.getHistory(tid, { before, limit: 100 });
    return {
      history_ids: history.map((s) => s.checkpoint.checkpoint_id),
      earlier_ids: earlier.map((s) => s.checkpoint.checkpoint_id),
      missing_item: await sdk.store.getItem(["nobody"], "nothing"),
      thread: await sdk.threads.get(tid),
    };
  },
});
