// The frontend layer list (the session's FrontendGraph): filterable; layers named by the
// selected expression's spans are marked; clicking one highlights its expressions.
import { h, replace } from "../dom.js";
import { TOPIC } from "../hub.js";
import { Pane } from "../pane.js";

const MAX_ROWS = 2000;

export class LayersPane extends Pane {
  render() {
    this.filter = h("input.search", { type: "search", placeholder: "Filter layers…",
      "aria-label": "Filter layers", on: { input: () => this.renderRows() } });
    this.count = h("span.count");
    this.list = h("ul.layer-list", { "data-testid": "layer-list", "aria-label": "Frontend layers" });
    return h("div.pane.layers-pane", {},
      h("div.pane-header", {}, h("span.pane-title", {}, "Frontend layers"), h("span.spacer"), this.count),
      h("div.pane-toolbar", {}, this.filter),
      this.list);
  }

  afterMount() {
    this.layers = [];
    this.linked = new Set();
    this.active = null;
    this.rowsByName = new Map();
    this.listen(TOPIC.EXPR_SELECTED, (sel) => this.mark(new Set(sel?.spans ?? []), null));
    this.listen(TOPIC.LAYER_SELECTED, (sel) => this.mark(this.linked, sel?.name ?? null));
  }

  /** Update the linked / active marks in place (a model may have 50,000 layers). */
  /**
   * @param {Set<string>} linked layers named by the selected expression's spans
   * @param {string | null} active the selected layer
   */
  mark(linked, active) {
    const touched = new Set([...this.linked, ...linked, this.active, active].filter(Boolean));
    this.linked = linked;
    this.active = active;
    if ([...touched].some((name) => !this.rowsByName.has(name) && this.isListed(name))) {
      this.renderRows(true);
      return;
    }
    for (const name of touched) {
      const li = this.rowsByName.get(name);
      if (li) this.styleRow(li, name);
    }
    this.count.textContent = this.countText(this.matchingCount);
    this.list.querySelector(".linked, .active")?.scrollIntoView({ block: "nearest" });
  }

  isListed(name) {
    return this.layers.some((l) => l.name === name) && this.matches(name);
  }

  matches(name, opType = "") {
    const q = this.filter.value.trim().toLowerCase();
    return !q || name.toLowerCase().includes(q) || (opType ?? "").toLowerCase().includes(q);
  }

  countText(n) {
    return `${n}${this.linked.size ? ` · ${this.linked.size} linked` : ""}`;
  }

  styleRow(li, name) {
    li.classList.toggle("linked", this.linked.has(name));
    li.classList.toggle("active", this.active === name);
    li.firstChild.setAttribute("aria-pressed", String(this.active === name));
  }

  /** @param {import("../protocol.js").FrontendGraph} graph */
  update(graph) {
    this.layers = graph?.layers ?? [];
    this.renderRows();
  }

  renderRows(scroll = false) {
    const matching = this.layers.filter((l) => this.matches(l.name, l.op_type));
    // Linked layers first-class: always rendered even past the row limit.
    const shown = matching.slice(0, MAX_ROWS);
    for (const l of matching.slice(MAX_ROWS)) if (this.linked.has(l.name) || l.name === this.active) shown.push(l);
    this.matchingCount = matching.length;
    this.count.textContent = this.countText(matching.length);
    this.rowsByName = new Map();
    replace(this.list, shown.map((l) => this.row(l)),
      matching.length > shown.length ? h("li.hint", {}, `${matching.length - shown.length} more (filter to narrow)`) : null);
    if (scroll) this.list.querySelector(".linked, .active")?.scrollIntoView({ block: "nearest" });
  }

  row(layer) {
    const li = h("li", {},
      h("button.layer-row", { type: "button", title: layerTitle(layer),
        on: { click: () => this.hub.emit(TOPIC.LAYER_SELECTED, { name: layer.name }) } },
      h("span.layer-name", {}, layer.name), h("span.layer-op", {}, layer.op_type ?? "")));
    this.styleRow(li, layer.name);
    this.rowsByName.set(layer.name, li);
    return li;
  }
}

/** The full name, op and, where the frontend knows it, the source line (PyTorch's stack trace). */
function layerTitle(layer) {
  const source = layer.attrs?.source ? `\n${layer.attrs.source}` : "";
  return `${layer.name} (${layer.op_type ?? "?"})${source}`;
}
