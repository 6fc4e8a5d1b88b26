// Keeps a RunModel complete and live: stored events over HTTP first, then the socket
// (`subscribe` with `since`), filling any gap over HTTP; falls back to polling.
import { io } from "socket.io-client";
import { api } from "./api.js";
import { C2S, NAMESPACE, S2C, TERMINAL_EVENTS } from "./protocol.js";
import { RunModel } from "./run-model.js";

const POLL_MS = 1000;

let sharedSocket = null;

/** The page's one Socket.IO connection to the explorer namespace. */
export function socket() {
  if (!sharedSocket) {
    sharedSocket = io(NAMESPACE, { transports: ["websocket", "polling"], reconnectionDelayMax: 3000 });
  }
  return sharedSocket;
}

/** Emit with an ack, as a promise (rejects after `timeoutMs`). */
export function request(event, payload, timeoutMs = 15000) {
  return new Promise((resolve, reject) => {
    socket().timeout(timeoutMs).emit(event, payload, (err, reply) => {
      if (err) reject(new Error(`${event}: no answer from the server`));
      else resolve(reply);
    });
  });
}

export class RunStream {
  /**
   * @param {string} runId
   * @param {(model: RunModel) => void} onChange called after each batch of applied events
   */
  constructor(runId, onChange) {
    this.model = new RunModel(runId);
    this.onChange = onChange;
    this.closed = false;
    this.buffer = new Map(); // index -> event that arrived ahead of a gap
    this.fetching = null;
    this.pollTimer = null;
    this.handleEvent = (ev) => this.receive(ev);
    this.handleConnect = () => this.subscribe();
  }

  async start() {
    await this.catchUp();
    if (this.model.finished || this.closed) return;
    const s = socket();
    s.on(S2C.RUN_EVENT, this.handleEvent);
    s.on("connect", this.handleConnect);
    if (s.connected) this.subscribe();
    this.pollTimer = setInterval(() => {
      if (!socket().connected) this.catchUp();
    }, POLL_MS);
  }

  async subscribe() {
    if (this.closed || this.model.finished) return;
    try {
      await request(C2S.SUBSCRIBE, { run_id: this.model.runId, since: this.model.nextIndex });
    } catch {
      this.catchUp();
    }
  }

  receive(event) {
    if (this.closed || event.run_id !== this.model.runId) return;
    if (event.index < this.model.nextIndex) return;
    this.buffer.set(event.index, event);
    if (this.drain()) this.changed();
    if (this.buffer.size) this.catchUp();
  }

  /** Apply buffered events that continue the sequence; true when any applied. */
  drain() {
    let applied = false;
    while (this.buffer.has(this.model.nextIndex)) {
      const ev = this.buffer.get(this.model.nextIndex);
      this.buffer.delete(this.model.nextIndex);
      applied = this.model.apply(ev) || applied;
    }
    for (const index of this.buffer.keys()) if (index < this.model.nextIndex) this.buffer.delete(index);
    return applied;
  }

  /** Fetch every stored event from nextIndex on (one request at a time). */
  catchUp() {
    if (this.fetching) return this.fetching;
    this.fetching = (async () => {
      try {
        const { events } = await api.events(this.model.runId, this.model.nextIndex);
        for (const ev of events) this.buffer.set(ev.index, ev);
        if (this.drain() || events.length === 0) this.changed();
      } finally {
        this.fetching = null;
      }
    })();
    return this.fetching;
  }

  changed() {
    if (this.model.finished) this.stopLive();
    this.onChange(this.model);
  }

  stopLive() {
    clearInterval(this.pollTimer);
    this.pollTimer = null;
    if (sharedSocket) {
      sharedSocket.off(S2C.RUN_EVENT, this.handleEvent);
      sharedSocket.off("connect", this.handleConnect);
    }
  }

  close() {
    if (!this.closed && !this.model.finished && sharedSocket?.connected) {
      request(C2S.UNSUBSCRIBE, { run_id: this.model.runId }).catch(() => null);
    }
    this.closed = true;
    this.stopLive();
  }
}

export const isTerminal = (event) => TERMINAL_EVENTS.has(event.type);
