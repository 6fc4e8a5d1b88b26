// DOM helpers. Text always goes in through textContent (model text may hold markup).

/**
 * h("div.cls.other#id", {attrs, on: {click}}, ...children)
 * Children are nodes or strings (strings become Text nodes); null/false are skipped.
 */
export function h(spec, props = {}, ...children) {
  const [tag, ...rest] = spec.split(/(?=[.#])/);
  const el = document.createElement(tag || "div");
  for (const part of rest) {
    if (part.startsWith(".")) el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  applyProps(el, props ?? {});
  append(el, children);
  return el;
}

const PROP_SETTERS = {
  on: (el, handlers) => {
    for (const [name, fn] of Object.entries(handlers)) el.addEventListener(name, fn);
  },
  dataset: (el, data) => Object.assign(el.dataset, data),
  style: (el, style) => Object.assign(el.style, style),
  text: (el, text) => {
    el.textContent = text;
  },
  class: (el, cls) => {
    for (const c of String(cls).split(/\s+/).filter(Boolean)) el.classList.add(c);
  },
};

const PROPERTY_KEYS = new Set(["value", "checked", "disabled", "hidden", "tabIndex", "title",
  "type", "htmlFor", "selected", "min", "max", "step", "name", "multiple", "accept"]);

function applyProps(el, props) {
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (PROP_SETTERS[key]) PROP_SETTERS[key](el, value);
    else if (PROPERTY_KEYS.has(key)) el[key] = value;
    else if (key.startsWith("on")) throw new Error(`use props.on for ${key}`);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace all children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export function clear(el) {
  el.replaceChildren();
}

export function formatMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

export function formatPercent(x) {
  if (x === null || x === undefined) return "";
  return `${Math.round(x * 100)}%`;
}

export function formatShape(shape) {
  if (!Array.isArray(shape)) return String(shape ?? "");
  return `[${shape.map((d) => (d === null || d === -1 ? "?" : d)).join(", ")}]`;
}

/** Debounce a function by `ms`. */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/**
 * An error banner shown in place: the title, the message's first line as a sentence, and
 * the rest of it (a parse error's source line and caret) kept as a block with its line breaks.
 */
export function errorBox(title, message, detail) {
  const [sentence, ...context] = String(message ?? "").split("\n");
  const block = [context.join("\n").replace(/\s+$/, ""), detail].filter(Boolean).join("\n");
  return h("div.error-box", { role: "alert" },
    h("strong", {}, title), sentence ? h("span", {}, ` ${sentence}`) : null,
    block ? h("pre.error-detail", { "data-testid": "error-detail" }, block) : null);
}

/** What an API error's detail adds for a reader (the operators a model needs), else null. */
export function errorDetail(err) {
  const ops = err?.detail?.operators;
  if (!ops) return null;
  return `unsupported operators: ${Object.entries(ops).map(([op, n]) => `${op} ×${n}`).join(", ")}`;
}
