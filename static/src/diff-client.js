// Promise-based client of the diff Web Worker, with an in-thread fallback.
import { unifiedLines } from "./linediff.js";
import { LruCache } from "./lru.js";
import { relayChanges } from "./relaydiff.js";

const FALLBACK = { relay: ({ a, b, options }) => relayChanges(a, b, options), unified: ({ a, b }) => unifiedLines(a, b) };

let worker = null;
let workerFailed = false;
let nextId = 1;
const pending = new Map();

function workerUrl() {
  const main = document.querySelector("script[data-bundle]")?.src;
  return main ? new URL("diff-worker.js", main).href : "/static/dist/diff-worker.js";
}

function getWorker() {
  if (worker || workerFailed) return worker;
  try {
    worker = new Worker(workerUrl(), { type: "module" });
    worker.onmessage = ({ data }) => {
      const p = pending.get(data.id);
      pending.delete(data.id);
      if (!p) return;
      if (data.error) p.reject(new Error(data.error));
      else p.resolve(data.result);
    };
    worker.onerror = () => {
      workerFailed = true;
      worker = null;
      for (const [id, p] of pending) {
        pending.delete(id);
        p.resolve(FALLBACK[p.kind](p.payload));
      }
    };
  } catch {
    workerFailed = true;
  }
  return worker;
}

function call(kind, payload) {
  const w = getWorker();
  if (!w) return Promise.resolve(FALLBACK[kind](payload));
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, kind, payload });
    w.postMessage({ id, kind, ...payload });
  });
}

const IDENTICAL = Object.freeze({ changes: [], added: 0, removed: 0, changed: 0, changedLinesB: [], unchanged: [] });
/** Diffs of snapshot pairs: immutable, so each pair is diffed once (weighed by its changes). */
const pairs = new LruCache(400_000, (d) => 1 + d.changes.length);

/**
 * The Relay-aware diff of two snapshots {id, text} (see relaydiff.js), cached by their ids
 * and the options.
 * @param {{id: number, text: string}} a
 * @param {{id: number, text: string}} b
 * @param {import("./relaydiff.js").RelayDiffOptions} [options]
 */
export function diffSnapshots(a, b, options = {}) {
  if (a.id === b.id || a.text === b.text) return Promise.resolve(IDENTICAL);
  const key = `${a.id}:${b.id}:${options.ignoreSpans ? "s" : ""}`;
  return pairs.get(key, () => call("relay", { a: a.text, b: b.text, options }));
}
/** [{op, text}] */
export const diffLines = (a, b) => call("unified", { a, b });
