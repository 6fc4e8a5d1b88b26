// Zoom and pan for a scrolling box (TEDD diagrams, loop nests): − / + / fit / 1:1 buttons,
// the wheel (with Ctrl or ⌘ where plain wheel should scroll), drag to pan. Zooming resizes
// the content (the caller's `apply(scale)`), so the box's own scrollbars pan it too.
import { h } from "./dom.js";

const STEP = 1.25;
const MIN = 0.002; // a 128-operator kernel's diagram is ~50,000 px wide: fit must reach it
const MAX = 8;

export class ZoomPan {
  /**
   * @param {HTMLElement} box the scrolling box
   * @param {{apply: (scale: number) => void, fitScale?: () => number | null,
   *   wheelNeedsCtrl?: boolean, label: string}} options fitScale: the scale that fits
   *   the content in the box (null: no fit button)
   */
  constructor(box, { apply, fitScale = null, wheelNeedsCtrl = false, label }) {
    this.box = box;
    this.apply = apply;
    this.fitScale = fitScale;
    this.scale = 1;
    this.fitted = Boolean(fitScale);
    this.readout = h("span.zoom-readout", { "data-testid": `${label}-zoom` });
    const button = (text, title, testid, onClick) => h("button.btn.small.ghost", { type: "button", title,
      "aria-label": title, "data-testid": testid, on: { click: onClick } }, text);
    this.controls = h("span.zoom-controls", {},
      button("−", "Zoom out", `${label}-zoom-out`, () => this.zoomBy(1 / STEP)),
      this.readout,
      button("+", "Zoom in", `${label}-zoom-in`, () => this.zoomBy(STEP)),
      fitScale ? button("fit", "Fit to the pane", `${label}-fit`, () => this.fit()) : null,
      button("1:1", "Reset the zoom to 100 %", `${label}-reset`, () => this.set(1)));
    box.classList.add("zoom-pan");
    box.addEventListener("wheel", (e) => this.onWheel(e, wheelNeedsCtrl), { passive: false });
    box.addEventListener("pointerdown", (e) => this.onDrag(e));
  }

  /** New content in the box: fit it if the user has not zoomed, else keep their scale. */
  refresh() {
    if (this.fitted) this.fit();
    else this.set(this.scale, false);
  }

  fit() {
    const scale = this.fitScale?.();
    this.set(scale ? Math.min(1, scale) : 1, true);
  }

  zoomBy(factor, at = null) {
    const { box } = this;
    const point = at ?? { x: box.clientWidth / 2, y: box.clientHeight / 2 };
    const before = this.scale;
    this.set(this.scale * factor);
    const ratio = this.scale / before;
    box.scrollLeft = (box.scrollLeft + point.x) * ratio - point.x;
    box.scrollTop = (box.scrollTop + point.y) * ratio - point.y;
  }

  set(scale, fitted = false) {
    this.scale = Math.min(MAX, Math.max(MIN, scale));
    this.fitted = fitted;
    this.apply(this.scale);
    this.readout.textContent = `${Number((this.scale * 100).toPrecision(2))}%`;
    this.box.dataset.zoom = this.scale.toFixed(3);
  }

  onWheel(event, needsCtrl) {
    if (needsCtrl && !(event.ctrlKey || event.metaKey)) return;
    event.preventDefault();
    const rect = this.box.getBoundingClientRect();
    this.zoomBy(event.deltaY < 0 ? STEP : 1 / STEP, { x: event.clientX - rect.left, y: event.clientY - rect.top });
  }

  /** Drag with the primary button pans (the box scrolls); a click without motion stays a click. */
  onDrag(event) {
    if (event.button !== 0 || event.target.closest?.("button, a, input")) return;
    const { box } = this;
    const start = { x: event.clientX, y: event.clientY, left: box.scrollLeft, top: box.scrollTop };
    let moved = false;
    const move = (e) => {
      const dx = e.clientX - start.x;
      const dy = e.clientY - start.y;
      if (!moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      moved = true;
      box.classList.add("panning");
      box.scrollLeft = start.left - dx;
      box.scrollTop = start.top - dy;
    };
    const up = () => {
      box.classList.remove("panning");
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  }
}
