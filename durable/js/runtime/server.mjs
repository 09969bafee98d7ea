// The Node side of JS graphs. One process per Python process that needs it, started by
// durable/js/process.py with the registered graphs as argv ("name=path:export" each).
// It speaks JSON lines on stdin/stdout: each request is {id, op, ...}, each answer
// {id, ok, result} or {id, ok: false, error}. Logs go to stderr, never to stdout, so the
// channel carries nothing but answers.
import { createRequire, register } from "node:module";
import { dirname, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";
import { tsImport } from "tsx/esm/api";
import { Command } from "@langchain/langgraph";
import { RemoteSaver } from "./remote_saver.mjs";

// A graph's imports resolve from its own folder first (a user's project with its
// node_modules, by Node's rules), else from this runtime's install, so a single file with
// no package.json works: resolve_hooks.mjs for ES modules, NODE_PATH (set by the Python
// side to this runtime's node_modules) for CommonJS, which tsx makes of a .ts file outside
// a "type": "module" package. tsImport loads TypeScript without a build step.
register("./resolve_hooks.mjs", import.meta.url, { data: { runtimeURL: import.meta.url } });
const runtimeRequire = createRequire(import.meta.url);

const graphs = new Map();
const loadErrors = new Map();

async function loadGraph(spec) {
  const eq = spec.indexOf("=");
  const name = spec.slice(0, eq);
  const target = spec.slice(eq + 1);
  const colon = target.lastIndexOf(":");
  const file = resolve(colon > 1 ? target.slice(0, colon) : target);
  const exportName = colon > 1 ? target.slice(colon + 1) : "graph";
  try {
    const module = await tsImport(pathToFileURL(file).href, import.meta.url);
    let graph = module[exportName];
    if (graph === undefined) {
      throw new Error(`${file} has no export named ${JSON.stringify(exportName)}`);
    }
    if (typeof graph === "function") graph = await graph();
    // An uncompiled StateGraph is compiled here; the checkpointer is set per request.
    if (typeof graph.compile === "function" && typeof graph.getGraph !== "function") {
      graph = graph.compile();
    }
    if (typeof graph.getGraph !== "function") {
      throw new Error(`${file}:${exportName} is not a LangGraph graph`);
    }
    graphs.set(name, { graph, file });
  } catch (err) {
    loadErrors.set(name, `${file}: ${err?.stack ?? err}`);
    process.stderr.write(`durable-js: graph ${name} failed to load: ${err?.message ?? err}\n`);
  }
}

function graphOf(name) {
  const entry = graphs.get(name);
  if (entry) return entry.graph;
  if (loadErrors.has(name)) throw new Error(`graph ${name} failed to load: ${loadErrors.get(name)}`);
  throw new Error(`unknown JS graph ${name}`);
}

async function drawing(name, xray) {
  const drawable = await graphOf(name).getGraphAsync({ xray });
  const json = drawable.toJSON();
  return { nodes: json.nodes, edges: json.edges };
}

// Calls back into the Python process, on behalf of the request `forId` whose thread
// there serves them: {call, for, op, ...} out, {reply, ok, result|error} in.
let nextCall = 0;
const replies = new Map();

function caller(forId) {
  return (op, fields) =>
    new Promise((resolvePromise, reject) => {
      const call = ++nextCall;
      replies.set(call, { resolve: resolvePromise, reject });
      send({ call, for: forId, op, ...fields });
    });
}

// The graph with a checkpointer that calls back for request `id`: a copy per request, so
// concurrent requests each call back for their own.
function bound(id, graph) {
  const compiled = graphOf(graph);
  return Object.assign(Object.create(Object.getPrototypeOf(compiled)), compiled, {
    checkpointer: new RemoteSaver(caller(id)),
  });
}

async function invoke({ id, graph, input, command, config }) {
  return bound(id, graph).invoke(command ? new Command(command) : input, config);
}

async function state({ id, graph, config }) {
  const snapshot = await bound(id, graph).getState(config);
  return {
    values: snapshot.values,
    next: snapshot.next,
    config: snapshot.config,
    tasks: snapshot.tasks.map((task) => ({
      id: task.id,
      name: task.name,
      interrupts: (task.interrupts ?? []).map((i) => ({ id: i.id, value: i.value })),
    })),
  };
}

const ops = {
  invoke,
  state,
  graphs: async () => ({
    loaded: [...graphs.keys()],
    errors: Object.fromEntries(loadErrors),
  }),
  graph: async ({ graph, xray }) => drawing(graph, xray ?? false),
  nodes: async ({ graph }) => Object.keys(graphOf(graph).nodes),
};

function send(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

async function main() {
  // Resolve the library once from the runtime, so a broken install fails here, loudly.
  runtimeRequire.resolve("@langchain/langgraph");
  for (const spec of process.argv.slice(2)) await loadGraph(spec);
  send({ ready: true, loaded: [...graphs.keys()], errors: Object.fromEntries(loadErrors) });
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch (err) {
      send({ id: null, ok: false, error: { type: "BadRequest", message: String(err) } });
      continue;
    }
    if (request.reply !== undefined) {
      const waiting = replies.get(request.reply);
      replies.delete(request.reply);
      if (request.ok) waiting?.resolve(request.result);
      else waiting?.reject(new Error(request.error));
      continue;
    }
    const op = ops[request.op];
    // Requests run concurrently; each answer carries the id of its request.
    Promise.resolve()
      .then(() => {
        if (!op) throw new Error(`unknown op ${request.op}`);
        return op(request);
      })
      .then(
        (result) => send({ id: request.id, ok: true, result }),
        (err) =>
          send({
            id: request.id,
            ok: false,
            error: { type: err?.name ?? "Error", message: err?.message ?? String(err) },
          }),
      );
  }
}

await main();
