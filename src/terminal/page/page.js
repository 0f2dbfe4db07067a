// The page /agents/:id/terminal: an xterm.js terminal filling the window, attached to the
// agent's terminal by client.js.
import { FitAddon } from "/assets/xterm/addon-fit.mjs";
import { Terminal } from "/assets/xterm/xterm.mjs";
import { connectTerminal } from "/assets/terminal/client.js";

const agentId = decodeURIComponent(location.pathname.split("/")[2] ?? "");
const status = document.getElementById("status");
const button = document.getElementById("reconnect");
document.getElementById("agent").textContent = agentId;
document.title = `warren: ${agentId}`;

const term = new Terminal({
  cursorBlink: true,
  fontFamily: "DejaVu Sans Mono, Menlo, monospace",
  fontSize: 14,
  scrollback: 5000,
});
const fit = new FitAddon();
term.loadAddon(fit);
term.open(document.getElementById("terminal"));
fit.fit();
term.focus();

const say = (state, text) => {
  status.dataset.state = state;
  status.textContent = text;
  button.hidden = state !== "ended" && state !== "error";
};
const terminal = connectTerminal(term, {
  agentId,
  fit,
  onState: (state, d = {}) => {
    if (state === "starting") say(state, "starting the terminal");
    else if (state === "connecting") say(state, "connecting");
    else if (state === "open") say(state, d.mode === "watch" ? "watching (read-only)" : "connected");
    else if (state === "reconnecting") say(state, `${d.reason}; reconnecting`);
    else if (state === "ended") say(state, `ended: ${d.reason}`);
    else if (state === "error") say(state, d.message);
  },
});
button.addEventListener("click", () => {
  terminal.reconnect();
  term.focus();
});
// for people debugging the page (and its tests): the terminal and its connection
window.warrenTerminal = { term, terminal };
