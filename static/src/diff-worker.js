// Web Worker: diffs texts off the main thread (big modules, loop nests).
// Request {id, kind: "relay" | "unified", a, b, options}; reply {id, result} or {id, error}.
import { unifiedLines } from "./linediff.js";
import { relayChanges } from "./relaydiff.js";

const KINDS = {
  relay: ({ a, b, options }) => relayChanges(a, b, options),
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
