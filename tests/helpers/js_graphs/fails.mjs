// A node that throws: the error's message must reach the Python side as it is.
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ n: Annotation() });

export const graph = new StateGraph(State)
  .addNode("explode", () => {
    throw new Error("card declined by the JS node");
  })
  .addEdge(START, "explode")
  .addEdge("explode", END);
