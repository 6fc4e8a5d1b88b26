// The session bar's own parts: renaming the session in place, and which run is open with
// the state of the session's other runs (polled while one of them is still going, so a run
// finishing in the background shows it).
import { api } from "../api.js";
import { h, replace } from "../dom.js";
import { RUN_STATUS } from "../protocol.js";

const POLL_MS = 1500;
const SHOWN_RUNS = 3;

/**
 * Rename in place: the name becomes a text field (Enter saves, Escape cancels).
 * @param {HTMLElement} title the element showing the name
 * @param {(name: string) => Promise<void>} save throws with a sentence when refused
 */
export function renameInPlace(title, save) {
  const input = h("input.rename-input", { type: "text", value: title.textContent, maxLength: 255,
    "aria-label": "Session name", "data-testid": "rename-input" });
  const error = h("span.rename-error", { role: "alert", "data-testid": "rename-error" });
  const form = h("form.rename-form", {}, input, error);
  const done = () => form.replaceWith(title);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await save(input.value);
      done();
    } catch (err) {
      error.textContent = err.message;
    }
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Escape") done();
  });
  title.replaceWith(form);
  input.select();
}

export class RunsStatus {
  /**
   * @param {string} sessionId
   * @param {(detail: import("../protocol.js").SessionDetail) => void} onDetail a fresh detail
   */
  constructor(sessionId, onDetail) {
    this.sessionId = sessionId;
    this.onDetail = onDetail;
    this.timer = null;
    this.openRun = h("span.open-run", { "data-testid": "open-run" });
    this.others = h("span.other-runs", { "data-testid": "other-runs" });
    this.el = h("span.runs-status", {}, this.openRun, this.others);
  }

  /** The runs of the session (newest first) and the one the page shows. */
  update(runs, openId) {
    this.runs = runs;
    this.openId = openId;
    const index = runs.findIndex((r) => r.id === openId);
    this.openRun.textContent = openId ? `run ${openId}` : "";
    this.openRun.title = index < 0 ? "" : `run ${index + 1} of ${runs.length} (newest first)`;
    const others = runs.filter((r) => r.id !== openId);
    replace(this.others, others.slice(0, SHOWN_RUNS).map((r) => h("span.other-run",
      { dataset: { status: r.status, run: r.id }, title: `run ${r.id}: ${r.status}` }, `${r.id} ${r.status}`)),
    others.length > SHOWN_RUNS ? h("span.hint-inline", {}, `+${others.length - SHOWN_RUNS}`) : null);
    this.poll(others.some((r) => r.status === RUN_STATUS.RUNNING));
  }

  poll(active) {
    clearTimeout(this.timer);
    this.timer = null;
    if (!active) return;
    this.timer = setTimeout(() => {
      api.session(this.sessionId).then((detail) => {
        this.onDetail(detail);
        this.update(detail.runs ?? [], this.openId);
      }, () => this.poll(true));
    }, POLL_MS);
  }

  close() {
    clearTimeout(this.timer);
  }
}
