// Relay text syntax highlighting: a small StreamLanguage tokenizer (no Lezer grammar).
// def @main(%x: Tensor[(1, 3), float32]) { %0 = nn.relu(%x) /* conv1 */; %0 }
import { HighlightStyle, StreamLanguage, syntaxHighlighting } from "@codemirror/language";
import { tags as t } from "@lezer/highlight";

const KEYWORDS = new Set(["def", "fn", "let", "if", "else", "match", "type", "free_var",
  "ref", "ref_read", "ref_write", "meta", "version"]);
const TYPES = /^(Tensor|Tuple|float(16|32|64)|bfloat16|u?int(1|8|16|32|64)|bool|void|handle)$/;
const ATOMS = new Set(["True", "False", "None", "nullptr"]);

/** Each rule: [regexp matched at the stream position, token name or fn(match, stream, state)]. */
const RULES = [
  [/^\/\*/, (_m, stream, state) => { state.inComment = true; return blockComment(stream, state); }],
  [/^\/\/.*/, () => "comment"],
  [/^"(?:[^"\\]|\\.)*"?/, () => "string"],
  [/^@[\w.$]+/, () => "globalName"],
  [/^%[\w.$]+/, () => "variableName"],
  [/^-?\d+(\.\d+)?([eE][-+]?\d+)?(f(16|32|64)|i(8|16|32|64)|u(8|16|32|64))?\b/, () => "number"],
  [/^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*/, (m, stream) => word(m[0], stream)],
  [/^(->|=|:)/, () => "operator"],
  [/^[()[\]{},;]/, () => "punctuation"],
];

function word(text, stream) {
  if (KEYWORDS.has(text)) return "keyword";
  if (TYPES.test(text)) return "typeName";
  if (ATOMS.has(text)) return "atom";
  if (stream.match(/^\s*=/, false)) return "attributeName";
  if (stream.match(/^\s*\(/, false)) return "function";
  return "name";
}

function blockComment(stream, state) {
  while (!stream.eol()) {
    if (stream.match("*/")) {
      state.inComment = false;
      break;
    }
    stream.next();
  }
  return "comment";
}

export const relayStream = {
  name: "relay",
  startState: () => ({ inComment: false }),
  copyState: (s) => ({ ...s }),
  token(stream, state) {
    if (state.inComment) return blockComment(stream, state);
    if (stream.eatSpace()) return null;
    for (const [re, handler] of RULES) {
      const m = stream.match(re);
      if (m) return handler(m, stream, state);
    }
    stream.next();
    return null;
  },
  tokenTable: {
    globalName: t.special(t.variableName),
    function: t.function(t.variableName),
    typeName: t.typeName,
    attributeName: t.attributeName,
  },
  languageData: { commentTokens: { block: { open: "/*", close: "*/" }, line: "//" } },
};

export const relayLanguage = StreamLanguage.define(relayStream);

const relayHighlight = HighlightStyle.define([
  { tag: t.keyword, class: "tok-keyword" },
  { tag: t.comment, class: "tok-comment" },
  { tag: t.string, class: "tok-string" },
  { tag: t.number, class: "tok-number" },
  { tag: t.atom, class: "tok-atom" },
  { tag: t.typeName, class: "tok-type" },
  { tag: t.attributeName, class: "tok-attr" },
  { tag: t.function(t.variableName), class: "tok-fn" },
  { tag: t.special(t.variableName), class: "tok-global" },
  { tag: t.variableName, class: "tok-var" },
  { tag: t.operator, class: "tok-op" },
  { tag: t.punctuation, class: "tok-punct" },
]);

/** The language + highlighting extensions for a Relay text editor. */
export function relay() {
  return [relayLanguage, syntaxHighlighting(relayHighlight)];
}
