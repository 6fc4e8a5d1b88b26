// Home: drop zone + file picker, the demo one click away, recent sessions.
import { api } from "../api.js";
import { errorBox, errorDetail, h, replace } from "../dom.js";
import { PAGES, UPLOAD_ACCEPT } from "../protocol.js";

export function mountHome(root) {
  const status = h("div.upload-status", { "aria-live": "polite", "data-testid": "upload-status" });
  const autorun = h("input", { type: "checkbox", checked: true, "data-testid": "autorun" });
  const shapes = h("input.shapes", { type: "text", placeholder: '{"input": [1, 3, 224, 224]}',
    "aria-label": "Input shapes (JSON)", spellcheck: "false" });
  const advanced = h("details.advanced", {}, h("summary", {}, "Input shapes"),
    h("p.hint", {}, "Only for models with dynamic input dimensions: a JSON object of input name → shape."),
    shapes);
  const fileInput = h("input.visually-hidden", { type: "file", accept: UPLOAD_ACCEPT, id: "model-file",
    "data-testid": "file-input", on: { change: () => fileInput.files[0] && upload(fileInput.files[0]) } });
  const drop = h("label.drop-zone", { htmlFor: "model-file", tabIndex: 0, "data-testid": "drop-zone",
    on: {
      dragover: (e) => { e.preventDefault(); drop.classList.add("over"); },
      dragleave: () => drop.classList.remove("over"),
      drop: (e) => {
        e.preventDefault();
        drop.classList.remove("over");
        const file = e.dataTransfer?.files?.[0];
        if (file) upload(file);
      },
      keydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); fileInput.click(); } },
    } },
  h("span.drop-title", {}, "Drop a model here"),
  h("span.drop-sub", {}, "ONNX, TFLite, PyTorch .pt2 or Relay text — or "),
  h("span.btn.primary", {}, "Choose a file…"));
  const demo = h("button.btn", { type: "button", "data-testid": "open-demo", on: { click: openDemo } }, "Open the demo model");
  const importInput = h("input.visually-hidden", { type: "file", accept: ".json", id: "run-file",
    on: { change: () => importInput.files[0] && importRun(importInput.files[0]) } });
  const recent = h("div.recent", { "data-testid": "recent-sessions" }, h("p.hint", {}, "Loading recent sessions…"));

  replace(root,
    h("section.home-hero", {},
      h("h1", {}, "Explore a compilation, pass by pass"),
      h("p.lede", {}, "Upload a model to watch the Relay pipeline run: every pass with its time and "
        + "changes, before/after diffs, the frontend layer behind each expression, and the "
        + "schedule primitives of each fused kernel."),
      drop, fileInput,
      h("div.home-options", {},
        h("label.inline", {}, autorun, " run the pipeline right away (your last options; O3, numerics check and build by default)"),
        advanced),
      status,
      h("div.home-actions", {}, demo,
        h("label.btn.ghost", { htmlFor: "run-file", tabIndex: 0 }, "Import an exported run…"), importInput)),
    h("section.home-recent", {}, h("h2", {}, "Recent sessions"), recent));

  function busy(text) {
    replace(status, h("span.spinner"), h("span", {}, text));
  }

  function fail(title, err) {
    replace(status, errorBox(title, err.message, errorDetail(err)));
  }

  function go(sessionId, runId = null) {
    const q = new URLSearchParams();
    if (runId) q.set("run", runId);
    else if (autorun.checked) q.set("autorun", "1");
    const query = q.toString();
    window.location.assign(`${PAGES.session(sessionId)}${query ? `?${query}` : ""}`);
  }

  async function upload(file) {
    let inputShapes = null;
    if (shapes.value.trim()) {
      try {
        inputShapes = JSON.parse(shapes.value);
      } catch (err) {
        return fail("Input shapes are not valid JSON:", err);
      }
    }
    busy(`Importing ${file.name}…`);
    try {
      const { session } = await api.upload(file, inputShapes);
      go(session.id);
    } catch (err) {
      fail(`Could not import ${file.name}:`, err);
      if (err.code === "dynamic_shape" && err.detail?.suggested) offerPin(err.detail.suggested);
    } finally {
      fileInput.value = "";
    }
  }

  /** A model refused for its dynamic input dims: its pin (each dynamic dim 1) is filled in. */
  function offerPin(suggested) {
    shapes.value = JSON.stringify(suggested);
    advanced.open = true;
    status.append(h("p.hint", { "data-testid": "pin-offered" },
      "Its dynamic dimensions are pinned to 1 under Input shapes: edit them if you like, then upload the file again."));
  }

  async function openDemo() {
    busy("Loading the demo model…");
    try {
      const { session } = await api.demo();
      go(session.id);
    } catch (err) {
      fail("Could not open the demo model:", err);
    }
  }

  async function importRun(file) {
    busy(`Importing run ${file.name}…`);
    try {
      const { session, run } = await api.importRun(file);
      go(session.id, run.id);
    } catch (err) {
      fail(`Could not import ${file.name}:`, err);
    }
  }

  loadRecent(recent);
}

async function loadRecent(el) {
  try {
    const { sessions } = await api.sessions();
    if (!sessions.length) return replace(el, h("p.hint", {}, "No sessions yet. Upload a model or open the demo."));
    replace(el, h("table.grid", {},
      h("thead", {}, h("tr", {}, ["Model", "Format", "Layers", "Inputs", "Created", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, sessions.map((s) => h("tr", { "data-session-id": s.id },
        h("td", {}, h("a", { href: PAGES.session(s.id) }, s.name)),
        h("td", {}, s.format), h("td.num", {}, String(s.num_layers ?? "")),
        h("td", {}, (s.inputs ?? []).map((i) => i.name).join(", ")),
        h("td", {}, formatDate(s.created)),
        h("td", {}, h("button.btn.small", { type: "button", title: `Delete ${s.name} and its runs`,
          "data-testid": "delete-session", on: { click: () => deleteSession(el, s) } }, "Delete")))))));
  } catch (err) {
    replace(el, errorBox("Recent sessions unavailable:", err.message));
  }
}

async function deleteSession(el, session) {
  if (!window.confirm(`Delete ${session.name} and all its runs?`)) return;
  try {
    await api.deleteSession(session.id);
    loadRecent(el);
  } catch (err) {
    replace(el, errorBox(`Could not delete ${session.name}:`, err.message));
  }
}

function formatDate(value) {
  if (!value) return "";
  const d = typeof value === "number" ? new Date(value * (value < 1e12 ? 1000 : 1)) : new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toLocaleString();
}
