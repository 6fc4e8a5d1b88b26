// The notice of a session whose inputs have symbolic dimensions (`batch`, `?`): relay.build
// needs static shapes, so the user fixes them here; pinning makes a new session of the same
// model (POST /api/sessions/<sid>/pin) and opens it. The symbolic session stays, and runs
// without build.
import { api } from "../api.js";
import { errorBox, formatShape, h, replace } from "../dom.js";
import { PAGES } from "../protocol.js";

/**
 * The inputs with a dimension unknown until run time.
 * @param {import("../protocol.js").Session} session
 * @returns {import("../protocol.js").TensorInfo[]}
 */
export function symbolicInputs(session) {
  return (session?.inputs ?? []).filter((t) => t.shape.some((d) => typeof d === "string"));
}

/**
 * One field per dimension to fix: a named symbol once for all the inputs that share it
 * (an encoder's `batch` in input_ids and attention_mask), an unnamed `?` once per position.
 * @param {import("../protocol.js").TensorInfo[]} inputs
 */
export function pinFields(inputs) {
  const fields = new Map();
  for (const t of inputs) {
    t.shape.forEach((d, axis) => {
      if (typeof d !== "string") return;
      const key = d === "?" ? `${t.name}[${axis}]` : d;
      if (!fields.has(key)) fields.set(key, { key, label: d === "?" ? `${t.name} dim ${axis}` : d, uses: [] });
      fields.get(key).uses.push({ input: t.name, axis });
    });
  }
  return [...fields.values()];
}

export class PinShapes {
  /** @param {HTMLElement} root */
  constructor(root) {
    this.root = root;
  }

  /** @param {import("../protocol.js").Session} session */
  update(session) {
    const inputs = symbolicInputs(session);
    if (!inputs.length) {
      replace(this.root);
      return;
    }
    const fields = pinFields(inputs);
    const boxes = fields.map((f) => h("input.pin-dim", { type: "number", min: "1", step: "1", value: "1",
      required: true, "aria-label": `Size of ${f.label}`, dataset: { key: f.key } }));
    this.error = h("div.pin-error", { "aria-live": "assertive" });
    const form = h("form.pin-form", { "data-testid": "pin-form",
      on: { submit: (e) => { e.preventDefault(); this.pin(session, inputs, fields, boxes); } } },
      fields.map((f, i) => h("label.inline", {}, h("span.mono", {}, f.label), " = ", boxes[i])),
      h("button.btn.small.primary", { type: "submit", "data-testid": "pin-button" }, "Pin shapes"));
    replace(this.root, h("div.pin-notice", { "data-testid": "symbolic-inputs", role: "status" },
      h("span", {}, "Symbolic input dimensions: ",
        inputs.map((t, i) => [i ? ", " : "", h("span.mono", {}, `${t.name} ${formatShape(t.shape)}`)]),
        ". The build needs them fixed; this session runs the pipeline without it."),
      form, this.error));
  }

  async pin(session, inputs, fields, boxes) {
    const size = new Map(fields.map((f, i) => [f.key, Number(boxes[i].value)]));
    const shapes = {};
    for (const t of inputs) {
      shapes[t.name] = t.shape.map((d, axis) => (typeof d !== "string" ? d
        : size.get(d === "?" ? `${t.name}[${axis}]` : d)));
    }
    replace(this.error);
    try {
      const { session: pinned } = await api.pin(session.id, shapes);
      window.location.assign(PAGES.session(pinned.id));
    } catch (err) {
      replace(this.error, errorBox("Could not pin the shapes:", err.message));
    }
  }
}
