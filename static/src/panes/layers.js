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
    this.listen(TOPIC.EXPR_SELECTED, (sel) => {
      this.linked = new Set(sel?.spans ?? []);
      this.active = null;
      this.renderRows(true);
    });
    this.listen(TOPIC.LAYER_SELECTED, (sel) => {
      this.active = sel?.name ?? null;
      this.renderRows(true);
    });
  }

  /** @param {{layers: Array<{name, op_type}>}} graph */
  update(graph) {
    this.layers = graph?.layers ?? [];
    this.renderRows();
  }

  renderRows(scroll = false) {
    const q = this.filter.value.trim().toLowerCase();
    const matching = this.layers.filter((l) => !q || l.name.toLowerCase().includes(q)
      || (l.op_type ?? "").toLowerCase().includes(q));
    // Linked layers first-class: always rendered even past the row limit.
    const shown = matching.slice(0, MAX_ROWS);
    for (const l of matching.slice(MAX_ROWS)) if (this.linked.has(l.name) || l.name === this.active) shown.push(l);
    this.count.textContent = `${matching.length}${this.linked.size ? ` · ${this.linked.size} linked` : ""}`;
    replace(this.list, shown.map((l) => this.row(l)),
      matching.length > shown.length ? h("li.hint", {}, `${matching.length - shown.length} more (filter to narrow)`) : null);
    if (scroll) this.list.querySelector(".linked, .active")?.scrollIntoView({ block: "nearest" });
  }

  row(layer) {
    const cls = [this.linked.has(layer.name) ? "linked" : "", this.active === layer.name ? "active" : ""].join(" ");
    return h("li", { class: cls.trim() || null },
      h("button.layer-row", { type: "button", title: `${layer.name} (${layer.op_type ?? "?"})`,
        "aria-pressed": String(this.active === layer.name),
        on: { click: () => this.hub.emit(TOPIC.LAYER_SELECTED, { name: layer.name }) } },
      h("span.layer-name", {}, layer.name), h("span.layer-op", {}, layer.op_type ?? "")));
  }
}
