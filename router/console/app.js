// The tool router console: plain DOM, the router's own API, no dependency.
// Everything shown comes from the API and is set with textContent: catalog text is untrusted.
import { $, KEY, VIEWS, api, askKey, banner, show, state } from "./core.js";
import { renderCatalogs, renderHealth, renderNamespaces } from "./catalogs.js";
import { deleteAll, loadMemories, lookUpSession } from "./sessions.js";
import { addMessage, copyBody, tryTurn } from "./turn.js";

async function refresh() {
  let status;
  try {
    status = await api("GET", "v1/status");
  } catch (error) {
    if (error.status === 401) return; // the key form asks for a key; a new one refreshes
    banner(error);
    schedule(5000); // the router may be back: keep asking, and clear the banner when it answers
    return;
  }
  banner(null);
  state.status = status;
  show($("key-panel"), false);
  show($("views"), true);
  show($("forget-key"), Boolean(state.key));
  const scope = status.auth.namespaces;
  $("who").textContent = status.auth.keys
    ? scope ? `key for ${scope.join(", ")}` : "key for every namespace"
    : "no API keys (loopback only)";
  $("version").textContent = `tool-router ${status.version}`;
  renderCatalogs(status);
  renderNamespaces(status);
  renderHealth(status);
  schedule(status.sync.running.length ? 1000 : 10000);
}

function schedule(ms) {
  clearTimeout(state.timer);
  state.timer = setTimeout(refresh, ms);
}

function route() {
  const name = VIEWS.includes(location.hash.slice(1)) ? location.hash.slice(1) : "catalogs";
  for (const view of VIEWS) show($(`view-${view}`), view === name);
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.view === name);
}

function start() {
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.key = $("key-input").value.trim();
    sessionStorage.setItem(KEY, state.key);
    $("key-input").value = "";
    refresh();
  });
  $("forget-key").addEventListener("click", () => askKey(""));
  $("try-form").addEventListener("submit", tryTurn);
  $("try-add").addEventListener("click", () => addMessage());
  $("copy-body").addEventListener("click", copyBody);
  $("session-form").addEventListener("submit", lookUpSession);
  $("memory-form").addEventListener("submit", loadMemories);
  $("delete-all").addEventListener("click", deleteAll);
  addMessage();
  window.addEventListener("hashchange", () => {
    route();
    refresh();
  });
  route();
  refresh();
}

document.addEventListener("DOMContentLoaded", start);
