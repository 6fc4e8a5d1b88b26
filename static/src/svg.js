// Graphviz DOT -> sanitized SVG element (viz.js, loaded on first use as its own chunk).

let vizPromise = null;

function viz() {
  if (!vizPromise) vizPromise = import("@viz-js/viz").then((m) => m.instance());
  return vizPromise;
}

const DROP_ELEMENTS = "script, foreignObject, iframe, object, embed";

/** Remove anything executable from an SVG tree (DOT labels come from model names). */
export function sanitizeSvg(svg) {
  for (const el of svg.querySelectorAll(DROP_ELEMENTS)) el.remove();
  for (const el of [svg, ...svg.querySelectorAll("*")]) {
    for (const attr of [...el.attributes]) {
      const name = attr.name.toLowerCase();
      const value = attr.value.trim().toLowerCase();
      if (name.startsWith("on")) el.removeAttribute(attr.name);
      else if ((name === "href" || name.endsWith(":href")) && !value.startsWith("#")) el.removeAttribute(attr.name);
    }
  }
  return svg;
}

/** Render DOT text to an SVG element. Throws with Graphviz's message on bad input. */
export async function renderDot(dot) {
  const v = await viz();
  const svg = v.renderSVGElement(dot);
  return sanitizeSvg(svg);
}
