// A node that asks a human with interrupt(), then acts on the answer.
import { Annotation, END, START, StateGraph, interrupt } from "@langchain/langgraph";

const State = Annotation.Root({
  amount: Annotation<number>(),
  decision: Annotation<string>(),
  paid: Annotation<boolean>(),
});

export const graph = new StateGraph(State)
  .addNode("review", (state: typeof State.State) => {
    const answer = interrupt({ question: "approve?", amount: state.amount });
    return { decision: answer };
  })
  .addNode("pay", (state: typeof State.State) => ({ paid: state.decision === "yes" }))
  .addEdge(START, "review")
  .addEdge("review", "pay")
  .addEdge("pay", END);
