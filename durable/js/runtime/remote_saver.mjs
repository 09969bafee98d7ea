// A checkpointer whose every method is answered by the Python process's saver (DjangoSaver),
// so a JS graph's checkpoints, blobs and writes are rows of the project's tables and the
// Node process holds no database credentials. `call(op, fields)` asks the Python side.
import { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

// A checkpoint tuple as the Python side sends it (saver_calls._tuple), in LangGraph.js's
// field names.
function checkpointTuple(found) {
  return {
    config: found.config,
    checkpoint: found.checkpoint,
    metadata: found.metadata,
    parentConfig: found.parent_config ?? undefined,
    pendingWrites: found.pending_writes,
  };
}

export class RemoteSaver extends BaseCheckpointSaver {
  constructor(call) {
    super();
    this.call = call;
  }

  async getTuple(config) {
    const found = await this.call("checkpoint.get_tuple", { config });
    if (!found) return undefined;
    return checkpointTuple(found);
  }

  async *list(config, options = {}) {
    const found = await this.call("checkpoint.list", {
      config,
      limit: options.limit ?? null,
      before: options.before ?? null,
      filter: options.filter ?? null,
    });
    for (const item of found) {
      yield checkpointTuple(item);
    }
  }

  async put(config, checkpoint, metadata, newVersions) {
    return this.call("checkpoint.put", {
      config,
      checkpoint,
      metadata,
      new_versions: newVersions,
    });
  }

  async putWrites(config, writes, taskId) {
    await this.call("checkpoint.put_writes", { config, writes, task_id: taskId });
  }

  async deleteThread(threadId) {
    await this.call("checkpoint.delete_thread", { thread_id: threadId });
  }

  // The Python saver's version format (a 32-digit counter, a dot, a random fraction), so
  // versions written from either side compare alike.
  getNextVersion(current) {
    const n = current === undefined ? 0 : typeof current === "number" ? current : Number.parseInt(String(current).split(".")[0], 10);
    return `${String(n + 1).padStart(32, "0")}.${Math.random().toFixed(16).slice(2)}`;
  }
}
