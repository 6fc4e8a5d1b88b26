// What the Graph view asks the server about a lazy graph (a big one: its groups' nodes come
// when they are opened): the members of groups, search, the nodes of layers.
import { getJSON } from "../api.js";
import { ROUTES } from "../protocol.js";

/** Fetch the nodes of the groups each side's model opens and has not loaded. */
export async function loadMissing(sides) {
  const asks = sides.map(async (s) => {
    const missing = s.model.missing();
    if (!missing.length) return false;
    s.model.addMembers(await getJSON(ROUTES.snapshotGraphMembers(s.snapshot, missing)));
    return true;
  });
  return (await Promise.all(asks)).some(Boolean);
}

/** Search hits [{id, group, line}] from the server (a lazy graph's nodes are not all here). */
export async function searchRemote(snapshot, query, constants) {
  if (!query.trim()) return [];
  return (await getJSON(ROUTES.snapshotGraphSearch(snapshot, query.trim(), constants))).hits;
}

/** The node ids of the nodes with one of `names` among their spans. */
export async function layerNodeIds(snapshot, names) {
  if (!names.length) return new Set();
  const { hits } = await getJSON(ROUTES.snapshotGraphLayers(snapshot, names));
  return new Set(hits.map((h) => h.id));
}
