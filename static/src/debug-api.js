// The HTTP side of debugging a run (docs/PROTOCOL.md, "Debugging"): breakpoints of a live
// run and the pass-by-pass comparison of two runs. The socket side (set_breakpoints,
// resume_run) goes through run-stream.js's `request`.
import { getJSON } from "./api.js";

const enc = encodeURIComponent;

export const DEBUG_ROUTES = Object.freeze({
  /** BreakpointList (GET; PUT {breakpoints}) */
  breakpoints: (rid) => `/api/runs/${enc(rid)}/breakpoints`,
  /** ResumeAck (POST {action}) */
  resume: (rid) => `/api/runs/${enc(rid)}/resume`,
  /** RunComparison */
  compare: (a, b) => `/api/compare?a=${enc(a)}&b=${enc(b)}`,
});

export const debugApi = {
  /** @returns {Promise<import("./protocol.js").BreakpointList>} */
  breakpoints: (rid) => getJSON(DEBUG_ROUTES.breakpoints(rid)),
  /** @returns {Promise<import("./protocol.js").RunComparison>} */
  compare: (a, b) => getJSON(DEBUG_ROUTES.compare(a, b)),
};
