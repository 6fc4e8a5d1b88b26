// Web Worker: diffs texts off the main thread (big modules, loop nests).
// Request {id, kind: "changes" | "unified", a, b}; reply {id, result} or {id, error}.
import { textChanges, unifiedLines } from "./linediff.js";

const KINDS = {
  changes: ({ a, b }) => textChanges(a, b),
  unified: ({ a, b }) => unifiedLines(a, b),
};

self.onmessage = (event) => {
  const { id, kind } = event.data;
  const run = KINDS[kind];
  if (!run) {
    self.postMessage({ id, error: `unknown diff kind ${kind}` });
    return;
  }
  try {
    self.postMessage({ id, result: run(event.data) });
  } catch (err) {
    self.postMessage({ id, error: String(err?.message ?? err) });
  }
};
