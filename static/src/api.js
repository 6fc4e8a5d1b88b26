// HTTP client for the explorer API: JSON in, JSON out, structured errors.
import { ROUTES } from "./protocol.js";

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
export const postJSON = (url, body) => request(url, {
  method: "POST",
  headers: { Accept: "application/json", "Content-Type": "application/json" },
  body: JSON.stringify(body ?? {}),
});
export const postForm = (url, form) => request(url, { method: "POST", body: form });

/** Snapshots are immutable: fetch each once. */
const snapshotCache = new Map();

export const api = {
  sessions: () => getJSON(ROUTES.sessions()),
  session: (sid) => getJSON(ROUTES.session(sid)),
  demo: () => postJSON(ROUTES.demo()),
  upload: (file, inputShapes) => {
    const form = new FormData();
    form.append("file", file, file.name);
    if (inputShapes) form.append("input_shapes", JSON.stringify(inputShapes));
    return postForm(ROUTES.sessions(), form);
  },
  importRun: (file) => {
    const form = new FormData();
    form.append("file", file, file.name);
    return postForm(ROUTES.importRun(), form);
  },
  run: (rid) => getJSON(ROUTES.run(rid)),
  events: (rid, since) => getJSON(ROUTES.events(rid, since)),
  snapshot(id) {
    if (!snapshotCache.has(id)) {
      const pending = getJSON(ROUTES.snapshot(id)).then((body) => body.snapshot);
      pending.catch(() => snapshotCache.delete(id));
      snapshotCache.set(id, pending);
    }
    return snapshotCache.get(id);
  },
  backtrace: (rid, nodeId) => getJSON(ROUTES.backtrace(rid, nodeId)),
  layer: (rid, name) => getJSON(ROUTES.layer(rid, name)),
  schedules: (rid) => getJSON(ROUTES.schedules(rid)),
  schedule: (rid, index) => getJSON(ROUTES.schedule(rid, index)),
  passes: () => getJSON(ROUTES.passes()),
};
