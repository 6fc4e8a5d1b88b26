// HTTP client for the explorer API: JSON in, JSON out, structured errors.
import { LruCache } from "./lru.js";
import { RAW_UPLOAD_TYPE, ROUTES } from "./protocol.js";

/** An error answered by the server (`{"error": {code, message, detail}}`) or the network. */
export class ApiError extends Error {
  constructor(status, code, message, detail) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.detail = detail ?? null;
  }
}

async function decode(response) {
  const type = response.headers.get("content-type") ?? "";
  const body = type.includes("json") ? await response.json().catch(() => null) : null;
  if (response.ok) return body;
  const err = body?.error ?? {};
  const fallback = response.status === 413 ? "The file is too large." : response.statusText;
  throw new ApiError(response.status, err.code ?? `http_${response.status}`,
    err.message ?? fallback ?? "Request failed", err.detail);
}

async function request(url, init) {
  let response;
  try {
    response = await fetch(url, { headers: { Accept: "application/json" }, ...init });
  } catch (err) {
    throw new ApiError(0, "network", `Cannot reach the server (${err.message}).`);
  }
  return decode(response);
}

export const getJSON = (url) => request(url);

/** GET a file: {blob, name} (the name from Content-Disposition); errors as for JSON. */
async function getFile(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new ApiError(0, "network", `Cannot reach the server (${err.message}).`);
  }
  if (!response.ok) return decode(response); // throws the server's structured error
  const name = (response.headers.get("content-disposition") ?? "").match(/filename="([^"]+)"/)?.[1] ?? null;
  return { blob: await response.blob(), name };
}
export const postJSON = (url, body) => request(url, {
  method: "POST",
  headers: { Accept: "application/json", "Content-Type": "application/json" },
  body: JSON.stringify(body ?? {}),
});
export const postForm = (url, form) => request(url, { method: "POST", body: form });
export const deleteJSON = (url) => request(url, { method: "DELETE" });
export const patchJSON = (url, body) => request(url, {
  method: "PATCH",
  headers: { Accept: "application/json", "Content-Type": "application/json" },
  body: JSON.stringify(body ?? {}),
});

/** Snapshots are immutable: each part is fetched once (and kept while the budget allows). */
const TEXT_BUDGET_CHARS = 48e6;
const MAP_BUDGET_ENTRIES = 1.5e6;
const texts = new LruCache(TEXT_BUDGET_CHARS, (s) => s.text.length);
const maps = new LruCache(MAP_BUDGET_ENTRIES, (m) => m.length);

/** GET one part; a server that ignores `part` answers the whole snapshot (both get cached). */
async function snapshotPart(id, part) {
  const { snapshot } = await getJSON(ROUTES.snapshotPart(id, part));
  if (part === "text" && Array.isArray(snapshot.source_map)) maps.put(id, snapshot.source_map);
  if (part === "source_map" && typeof snapshot.text === "string") {
    texts.put(id, { id, text: snapshot.text });
  }
  return snapshot;
}

export const api = {
  sessions: () => getJSON(ROUTES.sessions()),
  session: (sid) => getJSON(ROUTES.session(sid)),
  deleteSession: (sid) => deleteJSON(ROUTES.session(sid)),
  /** SessionRenamed: {session} under its new name. */
  renameSession: (sid, name) => patchJSON(ROUTES.session(sid), { name }),
  deleteRun: (rid) => deleteJSON(ROUTES.run(rid)),
  demo: () => postJSON(ROUTES.demo()),
  /** A new session of `sid`'s model with its symbolic input dims fixed: {session}. */
  pin: (sid, inputShapes) => postJSON(ROUTES.pin(sid), { input_shapes: inputShapes }),
  /** SessionCreated: the File is the request body (streamed by the browser, no multipart). */
  upload: (file, inputShapes) => request(ROUTES.rawUpload(file.name, inputShapes), {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": RAW_UPLOAD_TYPE },
    body: file,
  }),
  importRun: (file) => {
    const form = new FormData();
    form.append("file", file, file.name);
    return postForm(ROUTES.importRun(), form);
  },
  run: (rid) => getJSON(ROUTES.run(rid)),
  events: (rid, since) => getJSON(ROUTES.events(rid, since)),
  /** {id, text} of a snapshot. */
  snapshotText: (id) => texts.get(id, async () => {
    const snap = await snapshotPart(id, "text");
    return { id, text: snap.text };
  }),
  /** The source map (SourceMapEntry[]) of a snapshot. */
  snapshotMap: (id) => maps.get(id, async () => (await snapshotPart(id, "source_map")).source_map),
  /** {id, text, source_map} */
  async snapshot(id) {
    const [{ text }, sourceMap] = await Promise.all([api.snapshotText(id), api.snapshotMap(id)]);
    return { id, text, source_map: sourceMap };
  },
  /** The node-level Diff of two snapshots (nodes created, removed, rewritten and its summary). */
  diffNodes: (a, b) => getJSON(ROUTES.diffNodes(a, b)),
  backtrace: (rid, nodeId) => getJSON(ROUTES.backtrace(rid, nodeId)),
  layer: (rid, name) => getJSON(ROUTES.layer(rid, name)),
  schedules: (rid) => getJSON(ROUTES.schedules(rid)),
  schedule: (rid, index) => getJSON(ROUTES.schedule(rid, index)),
  passes: () => getJSON(ROUTES.passes()),
  /** RemarkList of a run: of one pass ({pass}) or about one node ({node}). */
  remarks: (rid, which) => getJSON(ROUTES.remarks(rid, which)),
  /** The reproducer zip of one pass: {blob, name}. */
  reproducer: (rid, index) => getFile(ROUTES.reproducer(rid, index)),
};
