// The static report's data layer (explorer/report.py writes it into the page): the page's
// requests are answered from the inlined data instead of a server. Imported before the
// page's modules run, it replaces `fetch` with a lookup of the exact URL the page builds;
// events (?since=N) and snapshot parts come from their own tables, texts and source maps
// stored once each. A request the report did not answer is a 404 that says so.

const script = document.getElementById("irx-report-data");

async function load() {
  const { encoding, data } = JSON.parse(script.textContent);
  if (encoding !== "gzip+base64") throw new Error(`unknown report encoding ${encoding}`);
  const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

const ready = script ? load() : null;

const json = (body, status = 200) => new Response(JSON.stringify(body), {
  status, headers: { "content-type": "application/json" },
});

/** [pattern, answer(data, match)] for the URLs answered from tables, not by exact URL. */
const TABLES = [
  [/^\/api\/runs\/[^/?]+\/events\?since=(\d+)$/, (d, m) => ({ events: d.events.filter((e) => e.index >= Number(m[1])) })],
  [/^\/api\/snapshots\/(\d+)\?part=(text|source_map)$/, (d, m) => {
    const snap = d.snapshots[m[1]];
    if (!snap) return null;
    const id = Number(m[1]);
    return m[2] === "text" ? { snapshot: { id, text: d.blobs[snap.text] } }
      : { snapshot: { id, source_map: d.blobs[snap.map] } };
  }],
];

function answer(data, url) {
  if (Object.hasOwn(data.responses, url)) return data.responses[url];
  for (const [pattern, fn] of TABLES) {
    const m = url.match(pattern);
    if (m) return fn(data, m);
  }
  return null;
}

if (ready) {
  window.fetch = async (input) => {
    const url = typeof input === "string" ? input : input.url;
    const data = await ready;
    const body = answer(data, url);
    if (body !== null && body !== undefined) return json(body);
    return json({ error: { code: "not_in_report", detail: null,
      message: "This static report does not include that answer (open the run in the explorer)." } }, 404);
  };
}
