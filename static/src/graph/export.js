// PNG and SVG of a laid-out graph, as shown (colours, selection, badges), whole.
import { COLORS, paint } from "./canvas.js";
import { HEADER_H } from "./layout.js";

const MAX_PNG_SIDE = 8192;

function esc(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

/** SVG text of `layout` with `marks`. */
export function toSvg(layout, marks) {
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${Math.ceil(layout.width)}" height="${Math.ceil(layout.height)}"`
    + ` viewBox="0 0 ${Math.ceil(layout.width)} ${Math.ceil(layout.height)}" font-family="monospace" font-size="11">`,
  `<rect width="100%" height="100%" fill="${COLORS.bg}"/>`,
  `<defs><marker id="a" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto">`
    + `<path d="M0,0L8,4L0,8z" fill="${COLORS.edge}"/></marker></defs>`];
  const stroke = (it, fallback) => (marks.selected === it.key ? COLORS.selected
    : COLORS[marks.status.get(it.key)] ?? fallback);
  for (const it of layout.items) {
    if (!it.box.expanded) continue;
    out.push(`<g data-key="${it.key}"><rect x="${it.x}" y="${it.y}" width="${it.w}" height="${it.h}" rx="6" fill="${COLORS.open}"`
      + ` stroke="${stroke(it, COLORS.groupStroke)}"/><text x="${it.x + 8}" y="${it.y + HEADER_H / 2 + 4}" font-weight="600">`
      + `${esc(it.box.label)}</text></g>`);
  }
  for (const e of layout.edges) {
    if (e.points.length < 2) continue;
    out.push(`<polyline points="${e.points.map((p) => p.join(",")).join(" ")}" fill="none" stroke="${COLORS.edge}" marker-end="url(#a)"/>`);
  }
  for (const it of layout.items) {
    if (it.box.expanded) continue;
    const group = it.box.kind === "group";
    out.push(`<g data-key="${it.key}"><rect x="${it.x}" y="${it.y}" width="${it.w}" height="${it.h}" rx="${group ? 6 : 4}"`
      + ` fill="${group ? COLORS.group : COLORS.node}" stroke="${stroke(it, COLORS.nodeStroke)}"`
      + ` stroke-width="${marks.status.has(it.key) || marks.selected === it.key ? 2.5 : 1}"/>`
      + `<text x="${it.x + 9}" y="${it.y + it.h / 2 - 3}"${group ? ' font-weight="600"' : ""}>${esc(it.box.label)}</text>`
      + `<text x="${it.x + 9}" y="${it.y + it.h / 2 + 11}" font-size="10" fill="${COLORS.muted}">${esc(it.box.sub)}</text>`
      + `${(marks.badges.get(it.key) ?? []).map((b) => `<title>${esc(b.title)}</title>`).join("")}</g>`);
  }
  out.push("</svg>");
  return out.join("\n");
}

/** A PNG blob of `layout` (scaled down to fit MAX_PNG_SIDE pixels a side). */
export function toPng(layout, marks) {
  const k = Math.min(2, MAX_PNG_SIDE / Math.max(1, layout.width, layout.height));
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.ceil(layout.width * k));
  canvas.height = Math.max(1, Math.ceil(layout.height * k));
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = COLORS.bg;
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.setTransform(k, 0, 0, k, 0, 0);
  paint(ctx, layout, marks, { x0: 0, y0: 0, x1: layout.width, y1: layout.height, k });
  return new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("PNG encoding failed"))), "image/png"));
}

/** Save `blob` as `name` (a download link clicked once). */
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
