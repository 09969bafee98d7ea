// The JS SDK's crons calls, each scenario on a tenant of its own (see lib.mjs). Asserted
// on by tests/worker/test_js_crons.py.
import { refusal, run } from "./lib.mjs";

const GREETING = { user_id: "ada" };

await run({
  async crons(sdk) {
    const { thread_id: tid } = await sdk.threads.create();
    const onThread = await sdk.crons.createForThread(tid, "preferences", {
      schedule: "0 9 * * 1-5",
      input: GREETING,
      timezone: "America/New_York",
    });
    const alone = await sdk.crons.create("preferences", {
      schedule: "*/5 * * * *",
      input: GREETING,
      metadata: { team: "growth" },
      onRunCompleted: "keep",
    });
    const counted = await sdk.crons.count();
    const onTheThread = await sdk.crons.count({ threadId: tid });
    const found = await sdk.crons.search({ metadata: { team: "growth" } });
    const selected = await sdk.crons.search({ select: ["cron_id", "enabled"], sortBy: "created_at", sortOrder: "asc" });
    const updated = await sdk.crons.update(alone.cron_id, { schedule: "0 * * * *", enabled: false });
    const disabled = await sdk.crons.search({ enabled: false });
    const badZone = await refusal(
      sdk.crons.create("preferences", { schedule: "* * * * *", input: GREETING, timezone: "Mars/Olympus" }),
    );
    const pastEnd = await refusal(
      sdk.crons.create("preferences", { schedule: "* * * * *", input: GREETING, endTime: "2020-01-01T00:00:00Z" }),
    );
    await sdk.crons.delete(alone.cron_id);
    return {
      thread_id: tid,
      on_thread: onThread,
      alone,
      counted,
      on_the_thread: onTheThread,
      found_ids: found.map((c) => c.cron_id),
      selected,
      updated,
      disabled_ids: disabled.map((c) => c.cron_id),
      bad_zone: badZone,
      past_end: pastEnd,
      after_delete: await sdk.crons.count(),
    };
  },
});
