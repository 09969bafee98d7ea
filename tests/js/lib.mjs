// What the scenario scripts beside this file share: a client of the official JS SDK per
// scenario, helpers that turn streams and refusals into plain JSON, and the runner.
//
// A script calls `run({name: async (sdk, env) => result, ...})`. The test set-up
// (tests/helpers/js_sdk.py) starts it with DURABLE_API_URL (the API's root, ".../api")
// and DURABLE_API_KEYS (a JSON object: scenario name -> API key of a tenant of its own,
// so that one scenario's threads never show in another's searches), and reads the one
// JSON object it prints on stdout: scenario name -> what it returned, or {"__error__":
// {message, status}} when it threw. `node script.mjs --list` prints the names only.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { Client } from "@langchain/langgraph-sdk";

// Far longer than any scenario takes; a scenario that hangs fails alone.
const SCENARIO_TIMEOUT_MS = 90_000;

export function client(apiKey, config = {}) {
  return new Client({
    apiUrl: process.env.DURABLE_API_URL,
    apiKey,
    // No retries: a refusal is what the test asserts on, at once.
    callerOptions: { maxRetries: 0 },
    ...config,
  });
}

// Every part of an SDK stream, as {event, data, id}.
export async function collect(stream) {
  const parts = [];
  for await (const part of stream) {
    parts.push({ event: part.event, data: part.data, id: part.id ?? null });
  }
  return parts;
}

// The answer of a call that should be refused: {status, detail, field}; or {accepted:
// value} when the server took it.
export async function refusal(promise) {
  try {
    return { accepted: await promise };
  } catch (error) {
    return { status: error.status ?? null, ...parseBody(error.text ?? error.message) };
  }
}

function parseBody(text) {
  try {
    const body = JSON.parse(text);
    return { detail: body?.detail ?? null, field: body?.field ?? null };
  } catch {
    return { detail: String(text), field: null };
  }
}

// The text content of LangChain messages as the SDK delivers them (dicts).
export function texts(messages) {
  return (messages ?? []).map((m) => [m.type, typeof m.content === "string" ? m.content : m.content]);
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// `scenario(probe)` while a probe run (tests/helpers/graphs.py) is in its slow node,
// held there until `probe.release()`; released in the end whatever happens, so that a
// failing scenario leaves no worker process waiting.
export async function withProbe(sdk, name, scenario) {
  const dir = join(process.env.DURABLE_JS_TMP, name);
  mkdirSync(dir, { recursive: true });
  const release = () => writeFileSync(join(dir, "release"), "");
  try {
    const input = { dir, log: [] };
    const { thread_id: tid } = await sdk.threads.create();
    const running = await sdk.runs.create(tid, "probe", { input });
    for (let i = 0; i < 1200 && !existsSync(join(dir, "slow")); i++) await sleep(50);
    return await scenario({ tid, running, input, release });
  } finally {
    release();
  }
}

function describe(error) {
  return {
    message: String(error?.message ?? error),
    status: error?.status ?? null,
    stack: String(error?.stack ?? "").split("\n").slice(0, 4).join("\n"),
  };
}

async function withTimeout(promise, name) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} timed out`)), SCENARIO_TIMEOUT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export async function run(scenarios) {
  if (process.argv.includes("--list")) {
    process.stdout.write(JSON.stringify(Object.keys(scenarios)));
    return;
  }
  const keys = JSON.parse(process.env.DURABLE_API_KEYS ?? "{}");
  const results = {};
  // One after the other: the suite's worker runs two runs at a time, and each
  // scenario's runs wait on one another anyway.
  for (const [name, scenario] of Object.entries(scenarios)) {
    try {
      const sdk = client(keys[name]);
      results[name] = await withTimeout(scenario(sdk, { key: keys[name] }), name);
    } catch (error) {
      results[name] = { __error__: describe(error) };
    }
  }
  // Exit once written: a scenario that timed out may still hold a stream open.
  process.stdout.write(JSON.stringify(results), () => process.exit(0));
}
