// Before | after side by side: one layout of the union of both sides' boxes, each side
// drawing its own subset, so a node both sides show (same node id) or a group both show
// (same stable key) sits at the same place on both. A box whose parent or state differs
// between the sides (a node moved into another group, a group open on one side only) gets
// a box of its own per side.
import { boxWidth, layoutBoxes } from "./layout.js";

/**
 * @typedef {import("./model.js").Box} Box
 * @typedef {import("./layout.js").Layout} Layout
 * @typedef {{model: import("./model.js").GraphModel, boxes: Array<Box>,
 *   edges: Array<{from: string, to: string, count: number}>}} Side
 */

/**
 * The union of the sides' box trees and edges, and for each side its key -> union key.
 * @param {Array<Side>} sides
 * @param {(model: any, group: number) => string} groupKey a group's key stable across snapshots
 */
export function unionOf(sides, groupKey) {
  /** @type {Map<string, {box: Box, parent: string, children: Array<any>}>} */
  const seen = new Map();
  const top = [];
  const maps = sides.map(() => new Map());
  sides.forEach((side, s) => {
    const add = (box, parent, into) => {
      const base = box.kind === "group" ? `G${groupKey(side.model, box.group)}` : box.key;
      let ukey = base;
      let u = seen.get(ukey);
      if (u && (u.parent !== parent || u.box.expanded !== box.expanded || u.box.kind !== box.kind)) {
        ukey = `${s}:${base}`; // moved or open on one side only: a box of its own
        u = seen.get(ukey);
      }
      if (!u) {
        u = { box: { ...box, key: ukey, width: boxWidth(box), children: [] }, parent, children: [] };
        seen.set(ukey, u);
        into.push(u.box);
      } else {
        u.box.width = Math.max(u.box.width, boxWidth(box));
      }
      maps[s].set(box.key, ukey);
      for (const child of box.children) add(child, ukey, u.box.children);
    };
    for (const box of side.boxes) add(box, "", top);
  });
  const edges = new Map();
  sides.forEach((side, s) => {
    for (const e of side.edges) {
      const from = maps[s].get(e.from);
      const to = maps[s].get(e.to);
      const pair = `${from}>${to}`;
      if (!edges.has(pair)) edges.set(pair, { from, to, count: e.count });
    }
  });
  return { boxes: top, edges: [...edges.values()], maps };
}

/**
 * Lay out both sides at once; each side's layout holds its own boxes and edges at the
 * union's coordinates (the same width and height, so their views pan and zoom together).
 * @param {Array<Side>} sides @param {(model: any, group: number) => string} groupKey
 * @param {"LR"|"TB"} direction
 * @returns {Promise<Array<Layout>>}
 */
export async function layoutSideBySide(sides, groupKey, direction) {
  const union = unionOf(sides, groupKey);
  const whole = await layoutBoxes(union.boxes, union.edges, direction);
  const route = new Map(whole.edges.map((e) => [`${e.from}>${e.to}`, e.points]));
  return sides.map((side, s) => {
    const map = union.maps[s];
    const boxOf = new Map();
    const index = (list) => list.forEach((b) => { boxOf.set(map.get(b.key), b); index(b.children); });
    index(side.boxes);
    const items = [];
    const byKey = new Map();
    for (const it of whole.items) {
      const box = boxOf.get(it.key);
      if (!box) continue;
      const item = { ...it, key: box.key, box };
      items.push(item);
      byKey.set(box.key, item);
    }
    const edges = side.edges.map((e) => ({ ...e, points: route.get(`${map.get(e.from)}>${map.get(e.to)}`) ?? [] }));
    return { items, edges, width: whole.width, height: whole.height, byKey, ms: whole.ms };
  });
}
