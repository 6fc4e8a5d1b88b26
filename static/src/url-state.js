// The session page's query string is its view state: run, pass, node, side, tab, ...
// Updates replace the history entry (a link or a reload reopens the same view).

export class UrlState {
  constructor() {
    this.params = new URLSearchParams(window.location.search);
  }

  get(key) {
    return this.params.get(key);
  }

  getInt(key) {
    const v = this.params.get(key);
    if (v === null || v === "") return null;
    const n = Number(v);
    return Number.isInteger(n) ? n : null;
  }

  /** Set (or with null/undefined, delete) keys and update the address bar. */
  patch(values, { push = false } = {}) {
    for (const [key, value] of Object.entries(values)) {
      if (value === null || value === undefined || value === "") this.params.delete(key);
      else this.params.set(key, String(value));
    }
    const query = this.params.toString();
    const url = `${window.location.pathname}${query ? `?${query}` : ""}`;
    if (url === `${window.location.pathname}${window.location.search}`) return;
    if (push) window.history.pushState(null, "", url);
    else window.history.replaceState(null, "", url);
  }
}
