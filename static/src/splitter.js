// Drag handles between panes: each adjusts one CSS length variable on the layout element,
// remembered in localStorage. Keyboard: focus the handle and use the arrow keys.

const STEP = 16;

export function splitter(layout, variable, { min = 160, max = 900, sign = 1, storageKey }) {
  const handle = document.createElement("div");
  handle.className = "splitter";
  handle.tabIndex = 0;
  handle.setAttribute("role", "separator");
  handle.setAttribute("aria-orientation", "vertical");
  handle.setAttribute("aria-label", "Resize pane");
  const saved = storageKey ? Number(localStorage.getItem(storageKey)) : NaN;
  if (saved) layout.style.setProperty(variable, `${saved}px`);

  // The column's rendered width (the variable may hold a clamp() expression), and at most
  // 45% of the layout each, so the centre keeps the room.
  const column = () => (sign > 0 ? handle.previousElementSibling : handle.nextElementSibling);
  const current = () => column()?.getBoundingClientRect().width || min;
  const set = (px) => {
    const v = Math.max(min, Math.min(max, 0.45 * layout.clientWidth, px));
    layout.style.setProperty(variable, `${v}px`);
    if (storageKey) localStorage.setItem(storageKey, String(Math.round(v)));
  };

  handle.addEventListener("pointerdown", (down) => {
    down.preventDefault();
    handle.setPointerCapture(down.pointerId);
    const start = current();
    const x0 = down.clientX;
    const move = (e) => set(start + sign * (e.clientX - x0));
    const up = () => {
      handle.removeEventListener("pointermove", move);
      handle.removeEventListener("pointerup", up);
      layout.classList.remove("resizing");
    };
    layout.classList.add("resizing");
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
  });
  handle.addEventListener("keydown", (e) => {
    const delta = { ArrowLeft: -STEP, ArrowRight: STEP }[e.key];
    if (delta) {
      e.preventDefault();
      set(current() + sign * delta);
    }
  });
  return handle;
}
