// A module resolution hook: a package a graph imports that its own folder does not have
// (a single file with no node_modules beside it) is resolved from this runtime's install.
// Node's ESM resolution ignores NODE_PATH, so CommonJS alone would not need this.
let runtimeURL;

export async function initialize(data) {
  runtimeURL = data.runtimeURL;
}

function isBare(specifier) {
  return !/^(\.|\/|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(specifier);
}

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    if (err?.code !== "ERR_MODULE_NOT_FOUND" || !isBare(specifier)) throw err;
    return nextResolve(specifier, { ...context, parentURL: runtimeURL });
  }
}
