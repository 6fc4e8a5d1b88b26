// Entry point: picks the page from <body data-page> and mounts it into #app.
import { mountHome } from "./pages/home.js";
import { SessionPage } from "./pages/session.js";

const THEME_KEY = "irx.theme";

function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

function setupThemeToggle() {
  applyTheme(localStorage.getItem(THEME_KEY));
  const button = document.querySelector("[data-theme-toggle]");
  button?.addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === "dark"
      : window.matchMedia("(prefers-color-scheme: dark)").matches;
    const next = dark ? "light" : "dark";
    localStorage.setItem(THEME_KEY, next);
    applyTheme(next);
  });
}

/** The session id from data-session-id, or from the /s/<id> path. */
function sessionIdOf(body) {
  if (body.dataset.sessionId) return body.dataset.sessionId;
  const m = window.location.pathname.match(/\/s\/([^/]+)/);
  return m ? decodeURIComponent(m[1]) : null;
}

const PAGES = {
  home: (app) => mountHome(app),
  session: (app, body) => new SessionPage(app, sessionIdOf(body)).mount(),
};

function main() {
  setupThemeToggle();
  const body = document.body;
  const app = document.getElementById("app");
  const page = PAGES[body.dataset.page] ?? PAGES.home;
  page(app, body);
  document.documentElement.dataset.ready = "true";
}

main();
