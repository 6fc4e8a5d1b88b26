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

/**
 * Graphviz sizes labels with the metrics of the PostScript fonts it knows; a generic CSS
 * family ("monospace") is measured as Times and its text overflows the boxes. Name the
 * PostScript family with the same metrics instead (the SVG still falls back to the generic).
 */
const GENERIC_FONTS = { monospace: "Courier", "sans-serif": "Helvetica", serif: "Times-Roman" };
const FONTNAME = /fontname\s*=\s*"?(monospace|sans-serif|serif)"?/g;

export function withMeasurableFonts(dot) {
  return dot.replace(FONTNAME, (_m, family) => `fontname="${GENERIC_FONTS[family]}"`);
}

/** Render DOT text to an SVG element. Throws with Graphviz's message on bad input. */
export async function renderDot(dot) {
  const v = await viz();
  const svg = v.renderSVGElement(withMeasurableFonts(dot));
  return sanitizeSvg(svg);
}
