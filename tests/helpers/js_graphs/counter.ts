// A single-file TypeScript graph with no package.json: @langchain/langgraph comes from the
// project's runtime install.
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

export const graph = new StateGraph(State)
  .addNode("bump", (state: typeof State.State) => ({ count: 1, log: [`bump at ${state.count}`] }))
  .addNode("double", (state: typeof State.State) => ({ count: state.count, log: ["double"] }))
  .addEdge(START, "bump")
  .addEdge("bump", "double")
  .addEdge("double", END);
