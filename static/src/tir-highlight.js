// Token colouring of TIR-like loop nest text (`for (i0: int32, 0, 4) "parallel" {`), one line
// at a time into DOM nodes. Text goes in as text nodes only.
import { h } from "./dom.js";

const KEYWORDS = new Set(["for", "allocate", "primfn", "if", "else", "let", "attr", "realize",
  "produce", "consume", "while", "assert", "evaluate", "buffer_realize"]);
const TYPE = /^(u?int(1|8|16|32|64)|float(16|32|64)|bfloat16|bool|handle|void)$/;

/** [regexp at the current position, class name or fn(word, rest) -> class]. */
const RULES = [
  [/^"(?:[^"\\]|\\.)*"?/, "tok-string"],
  [/^\/\/.*/, "tok-comment"],
  [/^\d+(\.\d+)?(e[-+]?\d+)?(f(16|32|64)|i(8|16|32|64)|u(8|16|32|64))?\b/, "tok-number"],
  [/^[A-Za-z_][\w.]*/, (word, rest) => {
    if (KEYWORDS.has(word)) return "tok-keyword";
    if (TYPE.test(word)) return "tok-type";
    if (/^\s*\(/.test(rest)) return "tok-fn";
    return "tok-var";
  }],
  [/^(\/\/|%|[-+*/<>=!&|]=?|&&|\|\|)/, "tok-op"],
  [/^\s+/, null],
  [/^[^\s"\w]/, "tok-punct"],
];

/** The nodes of one line: spans with token classes, plain text for whitespace. */
export function tirLine(line) {
  const out = [];
  let rest = line;
  while (rest.length) {
    let matched = false;
    for (const [re, cls] of RULES) {
      const m = rest.match(re);
      if (!m || !m[0].length) continue;
      const text = m[0];
      rest = rest.slice(text.length);
      const name = typeof cls === "function" ? cls(text, rest) : cls;
      out.push(name ? h(`span.${name}`, {}, text) : text);
      matched = true;
      break;
    }
    if (!matched) {
      out.push(rest[0]);
      rest = rest.slice(1);
    }
  }
  return out;
}
