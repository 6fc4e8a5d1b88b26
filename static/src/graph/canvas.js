// Draws a laid-out graph on a canvas: pan (drag), zoom (wheel, at the pointer), click to
// select, double-click a group to expand or collapse it. Only what is in view is drawn, and
// labels only while they are big enough to read, so a frame stays cheap at any size.
import { HEADER_H } from "./layout.js";

const MIN_K = 0.02;
const MAX_K = 4;
const READABLE = 0.55; // below this scale the labels are too small to read
export const COLORS = {
  bg: "#ffffff", node: "#f4f6fa", nodeStroke: "#9aa5b8", group: "#eef1f7", groupStroke: "#b5bfd0",
  fn: "#f3eefb", fnStroke: "#a58bd0", open: "rgba(120,130,160,0.06)", text: "#1d2433", muted: "#5d6780",
  edge: "#8a94a8", created: "#1f9d55", rewritten: "#d98a00", removed: "#d64545", selected: "#1a6fd6",
  related: "#7fb2f0", hit: "#ffd84d", drift: "#c2185b", nospan: "#8a94a8", kernel: "#00838f",
};

/**
 * @typedef {{status: Map<string, string>, selected: (string|null), related: Set<string>,
 *   hits: Set<string>, badges: Map<string, Array<{text: string, color: string, title: string}>>}} Marks
 */

export class GraphCanvas {
  /**
   * @param {HTMLElement} host
   * @param {{onSelect: (item: any) => void, onToggle: (item: any) => void,
   *   onView?: (view: {k: number, x: number, y: number}) => void,
   *   label: string}} handlers
   */
  constructor(host, { onSelect, onToggle, onView = () => {}, label }) {
    this.host = host;
    this.canvas = document.createElement("canvas");
    this.canvas.className = "graph-canvas";
    this.canvas.dataset.testid = `graph-canvas-${label}`;
    this.canvas.setAttribute("data-testid", `graph-canvas-${label}`);
    this.canvas.tabIndex = 0;
    this.canvas.graphView = this; // for tests and the benchmark
    host.append(this.canvas);
    this.onSelect = onSelect;
    this.onToggle = onToggle;
    this.onView = onView;
    this.layout = null;
    /** @type {Marks} */
    this.marks = { status: new Map(), selected: null, related: new Set(), hits: new Set(), badges: new Map() };
    this.view = { k: 1, x: 0, y: 0 };
    this.frameMs = [];
    this.queued = false;
    this.resize = new ResizeObserver(() => this.redraw());
    this.resize.observe(host);
    this.wire();
  }

  destroy() {
    this.resize.disconnect();
    this.canvas.remove();
  }

  wire() {
    const c = this.canvas;
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = c.getBoundingClientRect();
      const factor = Math.exp(-e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0015));
      this.zoomAt(factor, e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    c.addEventListener("pointerdown", (down) => {
      if (down.button !== 0) return;
      const x0 = down.clientX;
      const y0 = down.clientY;
      const start = { ...this.view };
      let moved = false;
      c.setPointerCapture(down.pointerId);
      const move = (e) => {
        if (!moved && Math.hypot(e.clientX - x0, e.clientY - y0) < 4) return;
        moved = true;
        this.view.x = start.x + e.clientX - x0;
        this.view.y = start.y + e.clientY - y0;
        this.redraw();
        this.onView(this.view);
      };
      const up = (e) => {
        c.removeEventListener("pointermove", move);
        c.removeEventListener("pointerup", up);
        if (!moved) this.click(e);
      };
      c.addEventListener("pointermove", move);
      c.addEventListener("pointerup", up);
    });
    c.addEventListener("dblclick", (e) => {
      const item = this.hit(e);
      if (item?.box.kind === "group") this.onToggle(item);
    });
  }

  click(e) {
    const item = this.hit(e);
    const r = this.canvas.getBoundingClientRect();
    if (item?.box.kind === "group" && item.box.expanded !== undefined) {
      const [wx, wy] = this.toWorld(e.clientX - r.left, e.clientY - r.top);
      if (wx > item.x + item.w - 22 && wy < item.y + (item.box.expanded ? HEADER_H : item.h)) {
        this.onToggle(item); // the ± corner
        return;
      }
    }
    this.onSelect(item);
  }

  toWorld(px, py) {
    return [(px - this.view.x) / this.view.k, (py - this.view.y) / this.view.k];
  }

  /** The box under the pointer: the innermost one. */
  hit(e) {
    if (!this.layout) return null;
    const r = this.canvas.getBoundingClientRect();
    const [x, y] = this.toWorld(e.clientX - r.left, e.clientY - r.top);
    let best = null;
    for (const it of this.layout.items) {
      if (x >= it.x && x <= it.x + it.w && y >= it.y && y <= it.y + it.h && (!best || it.depth >= best.depth)) best = it;
    }
    return best;
  }

  /** Where a box is on the screen (tests click there). */
  screenBox(key) {
    const it = this.layout?.byKey.get(key);
    if (!it) return null;
    const r = this.canvas.getBoundingClientRect();
    const { k, x, y } = this.view;
    return { x: r.left + x + it.x * k, y: r.top + y + it.y * k, w: it.w * k, h: it.h * k,
      header: Math.min(it.h, HEADER_H) * k };
  }

  /** @param {import("./layout.js").Layout} layout */
  setLayout(layout, { keepView = false } = {}) {
    this.layout = layout;
    if (!keepView) this.fit({ readable: true });
    else this.redraw();
  }

  /** The whole graph in view; when that is too small to read (`readable`), its start at a
   * scale that is. */
  fit({ readable = false } = {}) {
    if (!this.layout) return;
    const { clientWidth: w, clientHeight: h } = this.host;
    const whole = Math.min(1.2, (w - 16) / Math.max(1, this.layout.width), (h - 16) / Math.max(1, this.layout.height));
    if (readable && whole < READABLE) {
      const k = Math.min(1, Math.max(READABLE, h / Math.max(1, this.layout.height), w / Math.max(1, this.layout.width)));
      this.view = { k, x: Math.max(8, (w - this.layout.width * k) / 2), y: Math.max(8, (h - this.layout.height * k) / 2) };
    } else {
      const k = Math.max(MIN_K, whole);
      this.view = { k, x: (w - this.layout.width * k) / 2, y: Math.max(8, (h - this.layout.height * k) / 2) };
    }
    this.redraw();
  }

  /** Centre box `key` (at a readable scale when the whole graph is too small to read). */
  centre(key) {
    const it = this.layout?.byKey.get(key);
    if (!it) return false;
    const { clientWidth: w, clientHeight: h } = this.host;
    const k = Math.max(this.view.k, Math.min(1, 0.8 * w / it.w, 0.8 * h / it.h, 0.9));
    this.view = { k, x: w / 2 - (it.x + it.w / 2) * k, y: h / 2 - (it.y + it.h / 2) * k };
    this.redraw();
    return true;
  }

  zoomAt(factor, px, py) {
    const k = Math.min(MAX_K, Math.max(MIN_K, this.view.k * factor));
    const ratio = k / this.view.k;
    this.view = { k, x: px - (px - this.view.x) * ratio, y: py - (py - this.view.y) * ratio };
    this.redraw();
    this.onView(this.view);
  }

  redraw() {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      this.draw();
    });
  }

  draw() {
    const t0 = performance.now();
    const dpr = window.devicePixelRatio || 1;
    const w = this.host.clientWidth;
    const h = this.host.clientHeight;
    if (this.canvas.width !== Math.round(w * dpr) || this.canvas.height !== Math.round(h * dpr)) {
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(h * dpr);
      this.canvas.style.width = `${w}px`;
      this.canvas.style.height = `${h}px`;
    }
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = COLORS.bg;
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    if (!this.layout) return;
    const { k, x, y } = this.view;
    ctx.setTransform(dpr * k, 0, 0, dpr * k, dpr * x, dpr * y);
    const [x0, y0] = this.toWorld(0, 0);
    const [x1, y1] = this.toWorld(w, h);
    paint(ctx, this.layout, this.marks, { x0, y0, x1, y1, k });
    this.frameMs.push(performance.now() - t0);
    if (this.frameMs.length > 200) this.frameMs.shift();
    this.canvas.dataset.frames = String(Number(this.canvas.dataset.frames ?? 0) + 1);
  }
}

/** Draw `layout` on `ctx` (already transformed to world units), clipped to the window. */
export function paint(ctx, layout, marks, { x0, y0, x1, y1, k }) {
  const inView = (it) => it.x < x1 && it.x + it.w > x0 && it.y < y1 && it.y + it.h > y0;
  const text = k * 11 >= 5;
  ctx.lineJoin = "round";
  for (const it of layout.items) if (it.box.expanded && inView(it)) drawOpenGroup(ctx, it, marks, text);
  ctx.strokeStyle = COLORS.edge;
  ctx.fillStyle = COLORS.edge;
  ctx.lineWidth = 1 / Math.max(k, 0.5);
  for (const e of layout.edges) {
    if (e.points.length < 2) continue;
    const [ex, ey] = e.points[e.points.length - 1];
    const [sx, sy] = e.points[0];
    if (Math.max(sx, ex) < x0 && Math.max(...e.points.map((p) => p[0])) < x0) continue;
    if (Math.min(sx, ex) > x1 && Math.min(...e.points.map((p) => p[0])) > x1) continue;
    ctx.beginPath();
    ctx.moveTo(sx, sy);
    for (let i = 1; i < e.points.length; i++) ctx.lineTo(e.points[i][0], e.points[i][1]);
    ctx.stroke();
    const [px, py] = e.points[e.points.length - 2];
    arrow(ctx, px, py, ex, ey);
  }
  for (const it of layout.items) if (!it.box.expanded && inView(it)) drawBox(ctx, it, marks, text);
}

function arrow(ctx, px, py, x, y) {
  const a = Math.atan2(y - py, x - px);
  ctx.beginPath();
  ctx.moveTo(x, y);
  ctx.lineTo(x - 7 * Math.cos(a - 0.4), y - 7 * Math.sin(a - 0.4));
  ctx.lineTo(x - 7 * Math.cos(a + 0.4), y - 7 * Math.sin(a + 0.4));
  ctx.closePath();
  ctx.fill();
}

function statusColor(marks, key) {
  const s = marks.status.get(key);
  return s ? COLORS[s] : null;
}

function drawOpenGroup(ctx, it, marks, text) {
  const fn = it.box.sub.startsWith("fused");
  ctx.fillStyle = COLORS.open;
  ctx.strokeStyle = marks.selected === it.key ? COLORS.selected : statusColor(marks, it.key) ?? (fn ? COLORS.fnStroke : COLORS.groupStroke);
  ctx.lineWidth = marks.selected === it.key ? 3 : 1;
  ctx.setLineDash(fn ? [] : [5, 3]);
  roundRect(ctx, it.x, it.y, it.w, it.h, 6);
  ctx.fill();
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.fillStyle = fn ? COLORS.fn : COLORS.group;
  ctx.fillRect(it.x + 1, it.y + 1, it.w - 2, HEADER_H - 2);
  if (!text) return;
  ctx.fillStyle = COLORS.text;
  ctx.font = "600 11px ui-monospace, monospace";
  ctx.textBaseline = "middle";
  ctx.fillText(clip(ctx, `${it.box.label}`, it.w - 60), it.x + 8, it.y + HEADER_H / 2);
  ctx.fillStyle = COLORS.muted;
  ctx.fillText("−", it.x + it.w - 16, it.y + HEADER_H / 2);
  drawBadges(ctx, it, marks, it.y + HEADER_H / 2, it.w - 28);
}

function drawBox(ctx, it, marks, text) {
  const group = it.box.kind === "group";
  const fn = group && it.box.sub.startsWith("fused");
  const status = statusColor(marks, it.key);
  ctx.fillStyle = marks.hits.has(it.key) ? COLORS.hit : fn ? COLORS.fn : group ? COLORS.group : COLORS.node;
  roundRect(ctx, it.x, it.y, it.w, it.h, group ? 6 : 4);
  ctx.fill();
  const selected = marks.selected === it.key;
  ctx.strokeStyle = selected ? COLORS.selected : marks.related.has(it.key) ? COLORS.related
    : status ?? (fn ? COLORS.fnStroke : group ? COLORS.groupStroke : COLORS.nodeStroke);
  ctx.lineWidth = selected ? 3 : status || marks.related.has(it.key) ? 2.5 : 1;
  if (group) {
    ctx.stroke();
    ctx.lineWidth = 1;
    roundRect(ctx, it.x + 3, it.y + 3, it.w - 6, it.h - 6, 4); // a stack: it holds more
  }
  ctx.stroke();
  if (status) { // a stripe on the left edge says created / rewritten / removed
    ctx.fillStyle = status;
    ctx.fillRect(it.x + 1, it.y + 2, 4, it.h - 4);
  }
  if (!text) return;
  ctx.textBaseline = "middle";
  ctx.fillStyle = COLORS.text;
  ctx.font = `${group ? "600 " : ""}11px ui-monospace, monospace`;
  ctx.fillText(clip(ctx, it.box.label, it.w - (group ? 28 : 14)), it.x + 9, it.y + it.h / 2 - 7);
  ctx.fillStyle = COLORS.muted;
  ctx.font = "10px ui-monospace, monospace";
  ctx.fillText(clip(ctx, it.box.sub, it.w - 14), it.x + 9, it.y + it.h / 2 + 8);
  if (group) ctx.fillText("+", it.x + it.w - 15, it.y + 11);
  drawBadges(ctx, it, marks, it.y - 1, it.w);
}

function drawBadges(ctx, it, marks, cy, right) {
  const badges = marks.badges.get(it.key);
  if (!badges?.length) return;
  ctx.font = "600 9px ui-sans-serif, sans-serif";
  let x = it.x + right;
  for (const b of badges) {
    const w = ctx.measureText(b.text).width + 8;
    x -= w + 2;
    ctx.fillStyle = b.color;
    roundRect(ctx, x, cy - 6, w, 12, 6);
    ctx.fill();
    ctx.fillStyle = "#fff";
    ctx.fillText(b.text, x + 4, cy);
  }
}

function clip(ctx, s, width) {
  if (ctx.measureText(s).width <= width) return s;
  let lo = 0;
  let hi = s.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(`${s.slice(0, mid)}…`).width <= width) lo = mid;
    else hi = mid - 1;
  }
  return `${s.slice(0, lo)}…`;
}

function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  ctx.roundRect(x, y, w, h, r);
}
