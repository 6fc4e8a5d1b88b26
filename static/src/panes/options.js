// Pipeline options (opt level, passes on/off, numerics check, build) and Run / Cancel.
import { api } from "../api.js";
import { h, replace } from "../dom.js";
import { Pane } from "../pane.js";
import { defaultRunOptions } from "../protocol.js";

const STORAGE_KEY = "irx.runOptions";
const BUILD_TITLE = "Run relay.build: the pipeline, then LowerTE (kernels and their schedules). Unticked: relay.optimize, the pipeline alone.";

export class OptionsPane extends Pane {
  render() {
    const saved = loadSaved();
    this.optLevel = h("select", { "aria-label": "Optimization level", "data-testid": "opt-level" },
      [0, 1, 2, 3].map((n) => h("option", { value: String(n), selected: n === saved.opt_level }, `O${n}`)));
    this.numerics = h("input", { type: "checkbox", checked: saved.check_numerics, "data-testid": "check-numerics" });
    this.build = h("input", { type: "checkbox", checked: saved.build, "data-testid": "build" });
    this.passList = h("div.pass-toggles", { "data-testid": "pass-toggles" });
    this.disabled = new Set(saved.disabled_pass);
    this.runButton = h("button.btn.primary", { type: "button", "data-testid": "run-button",
      on: { click: () => this.ctx.startRun(this.options()) } }, "▶ Run");
    this.cancelButton = h("button.btn", { type: "button", hidden: true, "data-testid": "cancel-button",
      on: { click: () => this.ctx.cancelRun() } }, "Cancel");
    this.passSummary = h("summary", {}, "Passes");
    this.details = h("details.options-more", {}, this.passSummary, this.passList);
    return h("div.options-bar", { "data-testid": "pipeline-options" },
      h("label.inline", {}, "Opt level ", this.optLevel),
      h("label.inline", { title: "Run the interpreter after every pass and compare outputs" }, this.numerics, " numerics check"),
      h("label.inline", { title: BUILD_TITLE }, this.build, " build"),
      this.details,
      this.runButton, this.cancelButton);
  }

  afterMount() {
    this.loadPasses();
  }

  /** Pass names for the on/off list: the registry if the server lists it, else the last run's. */
  async loadPasses(fallbackNames = []) {
    let names = fallbackNames;
    try {
      const body = await api.passes();
      names = (body.passes ?? []).map((p) => (typeof p === "string" ? p : p.name));
      this.fromRegistry = names.length > 0;
    } catch {
      // the registry listing is optional; fall back to the passes seen in a run
    }
    this.setPassNames(names);
  }

  /**
   * The passes a run reported, offered only when the server's registry could not be listed:
   * a run also reports stages of relay.build (StandardPipeline, LowerTE) that no option
   * can switch off, and the registry has passes a run may not have used.
   * @param {string[]} names
   */
  offerRunPasses(names) {
    if (!this.fromRegistry) this.setPassNames(names);
  }

  setPassNames(names) {
    const unique = [...new Set(names)].filter(Boolean);
    if (!unique.length && this.passList.childElementCount) return;
    if (!unique.length) {
      replace(this.passList, h("p.hint", {}, "Run once to list the passes of the pipeline."));
      return;
    }
    // passes switched off but not listed (a plugin's, gone since) stay visible and reversible
    const listed = [...unique, ...[...this.disabled].filter((n) => !unique.includes(n))];
    replace(this.passList,
      h("button.btn.small", { type: "button", "data-testid": "enable-all-passes",
        title: "Switch every pass back on", on: { click: () => this.enableAll() } }, "All on"),
      listed.map((name) => h("label.inline.pass-toggle", {},
        h("input", { type: "checkbox", checked: !this.disabled.has(name), dataset: { pass: name },
          on: { change: (e) => this.toggle(name, e.target.checked) } }), ` ${name}`)));
    this.showDisabled();
  }

  toggle(name, enabled) {
    if (enabled) this.disabled.delete(name);
    else this.disabled.add(name);
    this.showDisabled();
  }

  enableAll() {
    this.disabled.clear();
    for (const box of this.passList.querySelectorAll("input[data-pass]")) box.checked = true;
    this.showDisabled();
  }

  /** "Passes (2 off)": the choice stays in sight while the list is closed. */
  showDisabled() {
    const n = this.disabled.size;
    this.passSummary.textContent = n ? `Passes (${n} off)` : "Passes";
    this.passSummary.title = n ? `switched off: ${[...this.disabled].join(", ")}` : "";
  }

  /**
   * A session with symbolic input dimensions cannot be built until they are pinned: the
   * build box is cleared and locked (the saved choice is kept for other sessions).
   * @param {boolean} symbolic
   */
  setSymbolic(symbolic) {
    this.symbolic = symbolic;
    this.build.disabled = symbolic;
    this.build.checked = symbolic ? false : loadSaved().build;
    this.build.parentElement.title = symbolic
      ? "relay.build needs static input shapes: pin the symbolic dimensions first"
      : BUILD_TITLE;
  }

  options() {
    const opts = {
      ...defaultRunOptions(),
      opt_level: Number(this.optLevel.value),
      check_numerics: this.numerics.checked,
      build: this.build.checked,
      disabled_pass: [...this.disabled],
    };
    const saved = this.symbolic ? { ...opts, build: loadSaved().build } : opts;
    localStorage.setItem(STORAGE_KEY, JSON.stringify(saved));
    return opts;
  }

  setRunning(running) {
    this.runButton.disabled = running;
    this.runButton.textContent = running ? "Running…" : "▶ Run";
    this.cancelButton.hidden = !running;
  }
}

function loadSaved() {
  try {
    return { ...defaultRunOptions(), ...JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "{}") };
  } catch {
    return defaultRunOptions();
  }
}
