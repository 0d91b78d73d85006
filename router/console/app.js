// The tool router console: plain DOM, the router's own API, no dependency.
// Everything shown comes from the API and is set with textContent: catalog text is untrusted.
"use strict";

const KEY = "router.apiKey";
const VIEWS = ["catalogs", "try", "sessions", "health"];
const state = { key: sessionStorage.getItem(KEY), status: null, timer: null, explain: true };

const $ = (id) => document.getElementById(id);

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function clear(node) {
  node.replaceChildren();
  return node;
}

function show(node, visible) {
  node.hidden = !visible;
  return node;
}

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? body.detail : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

// One API call with the tab's key; a 401 asks for a key again.
async function api(method, path, body) {
  const headers = { accept: "application/json" };
  if (state.key) headers.authorization = `Bearer ${state.key}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try {
    data = await response.json();
  } catch (_) {
    data = null;
  }
  if (response.status === 401) {
    askKey(state.key ? "That key is not valid." : "");
    throw new ApiError(401, data);
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

function askKey(message) {
  state.key = null;
  sessionStorage.removeItem(KEY);
  $("key-error").textContent = message;
  show($("key-panel"), true);
  show($("views"), false);
  show($("forget-key"), false);
}

function banner(error) {
  const node = $("banner");
  node.textContent = error ? `${error.message}` : "";
  show(node, Boolean(error));
}

function fail(node, error) {
  node.textContent = error.body && error.body.error ? `${error.body.error}: ${error.message}` : error.message;
  show(node, true);
}

function when(seconds) {
  if (seconds === null || seconds === undefined) return "";
  return new Date(seconds * 1000).toLocaleString();
}

function fixed(value, digits = 3) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

// --- status: catalogs, generation, health ---------------------------------------------------------

async function refresh() {
  let status;
  try {
    status = await api("GET", "v1/status");
  } catch (error) {
    if (error.status !== 401) banner(error);
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

function describeSync(sync) {
  if (!sync) return "";
  const counts = Object.entries(sync.counts || {})
    .filter(([name, n]) => n && name !== "namespace")
    .map(([name, n]) => `${n} ${name}`)
    .join(", ");
  const detail = sync.detail ? `: ${sync.detail}` : "";
  return `${sync.outcome}${counts ? ` (${counts})` : ""}${detail} · ${when(sync.at)}`;
}

function renderCatalogs(status) {
  const generation = status.generation;
  $("generation").textContent = generation
    ? `Active generation ${generation.id}: model ${generation.model}, text template "${generation.text}", ` +
      `${generation.dimension} dimensions${generation.rebuild_pending ? " (a rebuild is pending)" : ""}`
    : "No generation is served yet.";
  const body = clear($("catalogs").tBodies[0]);
  for (const catalog of status.catalogs) {
    const progress = el("td", { class: "progress" });
    if (catalog.progress) {
      const { done, written, total } = catalog.progress;
      progress.append(
        el("progress", { max: String(total), value: String(done) }),
        ` ${done} / ${total}`,
        el("span", { class: "muted", text: ` (${written} written)` }),
      );
    }
    const sync = catalog.last_sync;
    const row = el(
      "tr",
      { "data-namespace": catalog.namespace },
      el("td", { class: "name", text: catalog.namespace }),
      el("td", { class: "count", text: String(catalog.count) }),
      el("td", { text: catalog.source || "" }),
      el("td", { text: when(catalog.updated_at) }),
      el("td", { class: sync && sync.outcome.match(/failed|rejected/) ? "error" : "", text: describeSync(sync) }),
      progress,
      el("td", {}, el("button", { type: "button", text: "Functions", onclick: () => openCatalog(catalog.namespace) })),
    );
    body.append(row);
  }
  show($("catalogs-empty"), status.catalogs.length === 0);
}

// A definition in any of the three accepted shapes: OpenAI tool, bare, MCP.
function definition(item) {
  const inner = item && item.type === "function" && item.function ? item.function : item;
  return {
    name: String(inner.name || ""),
    description: typeof inner.description === "string" ? inner.description : "",
    schema: inner.parameters || inner.inputSchema || {},
  };
}

async function openCatalog(namespace) {
  const list = clear($("functions"));
  $("catalog-title").textContent = `${namespace}: loading…`;
  show($("catalog"), true);
  let catalog;
  try {
    catalog = await api("GET", `v1/catalogs/${encodeURIComponent(namespace)}`);
  } catch (error) {
    $("catalog-title").textContent = `${namespace}: ${error.message}`;
    return;
  }
  $("catalog-title").textContent = `${namespace}: ${catalog.functions.length} functions`;
  for (const item of catalog.functions) {
    const fn = definition(item);
    const schema = el("pre", { class: "schema", text: JSON.stringify(fn.schema, null, 2) });
    schema.hidden = true;
    const toggle = el("button", {
      type: "button",
      class: "small",
      text: "Schema",
      onclick: () => show(schema, schema.hidden),
    });
    list.append(
      el(
        "li",
        { class: "function" },
        el("div", { class: "head" }, el("strong", { class: "fn-name", text: fn.name }), toggle),
        el("p", { class: "fn-description", text: fn.description }),
        schema,
      ),
    );
  }
}

function renderNamespaces(status) {
  const names = status.catalogs.map((c) => c.namespace);
  for (const [id, keep] of [["try-namespace", false], ["memory-namespace", true]]) {
    const select = $(id);
    const current = select.value;
    const fixedOptions = keep ? [select.options[0]] : [];
    select.replaceChildren(...fixedOptions, ...names.map((n) => el("option", { value: n, text: n })));
    if (names.includes(current) || (keep && current === "")) select.value = current;
  }
}

function pairs(target, entries) {
  clear(target);
  for (const [name, value] of entries) {
    target.append(el("dt", { text: name }), el("dd", { text: value }));
  }
}

function renderHealth(status) {
  pairs(
    $("health-ready"),
    [["ready", status.ready ? "yes" : "no"], ...Object.entries(status.checks).map(([k, v]) => [k, v ? "ok" : "waiting"])],
  );
  const storage = status.storage;
  pairs($("health-storage"), [
    ["mode", storage.mode],
    ["state", storage.up ? "up" : "down"],
    ...(storage.detail ? [["detail", storage.detail]] : []),
  ]);
  const embedding = status.embedding;
  pairs(
    $("health-embedding"),
    embedding
      ? [
          ["model", embedding.model],
          ["dimension", String(embedding.dimension)],
          ...Object.entries(embedding.backends || {}).map(([kind, name]) => [`${kind} backend`, name]),
          ...Object.entries(embedding.timings_ms || {}).map(([name, ms]) => [`${name} ms`, String(ms)]),
        ]
      : [["model", "not loaded yet"]],
  );
  const body = clear($("health-traffic").tBodies[0]);
  for (const [label, figures] of [["last minute", status.traffic.recent], ["since start", status.traffic.since_start]]) {
    body.append(
      el(
        "tr",
        {},
        el("th", { text: label }),
        ...[figures.seconds, figures.requests, figures.errors, figures.rate_per_second, figures.p50_ms, figures.p90_ms, figures.p99_ms].map(
          (value) => el("td", { text: value === null ? "–" : String(value) }),
        ),
      ),
    );
  }
}

// --- try a turn --------------------------------------------------------------------------------------

function addMessage(role = "user", content = "") {
  const select = el("select", { class: "role" }, ...["user", "assistant", "system", "tool"].map((r) => el("option", { value: r, text: r })));
  select.value = role;
  const text = el("textarea", { class: "content", rows: "2", placeholder: "message text" });
  text.value = content;
  const row = el("div", { class: "message row" }, select, text);
  row.append(el("button", { type: "button", class: "small", text: "Remove", onclick: () => row.remove() }));
  $("try-messages").append(row);
}

function routeBody() {
  const messages = [...document.querySelectorAll("#try-messages .message")]
    .map((row) => ({ role: row.querySelector(".role").value, content: row.querySelector(".content").value }))
    .filter((m) => m.content.trim() !== "");
  const body = { namespace: $("try-namespace").value, messages };
  const session = $("try-session").value.trim();
  const user = $("try-user").value.trim();
  if (session) body.session_id = session;
  if (user) body.user_id = user;
  const max = Number($("try-max").value);
  if (max) body.max_functions = max;
  if (state.explain) body.explain = true;
  return body;
}

async function tryTurn(event) {
  event.preventDefault();
  show($("try-error"), false);
  let body = routeBody();
  let routed;
  try {
    try {
      routed = await api("POST", "v1/route", body);
    } catch (error) {
      // A router without score explanations refuses the field: route without it.
      if (error.status !== 422 || !String(error.message).startsWith("explain")) throw error;
      state.explain = false;
      body = routeBody();
      routed = await api("POST", "v1/route", body);
    }
  } catch (error) {
    fail($("try-error"), error);
    show($("try-result"), false);
    return;
  }
  renderRoute(body, routed);
}

function part(name, value) {
  return el("span", { class: "part" }, el("span", { class: "muted", text: `${name} ` }), value);
}

function explanation(info) {
  const box = el("div", { class: "explanation" });
  const weights = info.weights || {};
  box.append(
    part("dense", fixed(info.dense)),
    part("lexical", `${fixed(info.lexical)} (raw ${fixed(info.lexical_raw, 2)})`),
    part("context weight", fixed(info.context_weight, 2)),
  );
  if (info.recent !== null && info.recent !== undefined) box.append(part("recent context", fixed(info.recent)));
  box.append(part("weights", `dense ${fixed(weights.dense, 2)} · lexical ${fixed(weights.lexical, 2)} · usage ${fixed(weights.usage, 2)}`));
  const example = info.example
    ? el("span", {}, `“${info.example.text}” `, el("span", { class: "muted", text: `similarity ${fixed(info.example.similarity)}` }))
    : el("span", { class: "muted", text: "none" });
  box.append(el("div", { class: "example" }, el("span", { class: "muted", text: "usage example " }), example));
  return box;
}

function renderRoute(body, routed) {
  const ranked = clear($("ranked"));
  const explained = routed.functions.some((f) => f.explanation);
  $("try-note").textContent = explained ? "" : "This router does not explain its scores.";
  show($("try-note"), !explained);
  for (const fn of routed.functions) {
    const fill = el("div", { class: "fill" });
    fill.style.width = `${Math.max(0, Math.min(1, fn.score)) * 100}%`;
    const item = el(
      "li",
      { class: "routed", "data-name": fn.name },
      el(
        "div",
        { class: "head" },
        el("strong", { class: "fn-name", text: fn.name }),
        fn.pinned ? el("span", { class: "badge", text: "pinned" }) : "",
        el("div", { class: "bar" }, fill),
        el("span", { class: "score", text: fixed(fn.score) }),
      ),
      el("p", { class: "fn-description", text: fn.description }),
    );
    if (fn.explanation) item.append(explanation(fn.explanation));
    ranked.append(item);
  }
  if (routed.functions.length === 0) ranked.append(el("li", { class: "muted", text: "No function was chosen." }));
  const history = clear($("try-history"));
  for (const message of routed.history) history.append(messageItem(message));
  if (routed.history.length === 0) history.append(el("li", { class: "muted", text: "none" }));
  const memories = clear($("try-memories"));
  for (const memory of routed.memories) {
    memories.append(el("li", {}, el("span", { class: "memory-text", text: memory.text }), el("span", { class: "muted", text: ` ${fixed(memory.score)}` })));
  }
  if (routed.memories.length === 0) memories.append(el("li", { class: "muted", text: "none" }));
  $("route-body").textContent = JSON.stringify(body, null, 2);
  show($("try-result"), true);
}

function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p.text === "string" ? p.text : JSON.stringify(p))).join(" ");
  return content === null || content === undefined ? "" : JSON.stringify(content);
}

function messageItem(message) {
  const calls = (message.tool_calls || []).map((c) => (c.function ? c.function.name : "")).filter(Boolean);
  const text = contentText(message.content) + (calls.length ? ` [calls ${calls.join(", ")}]` : "");
  return el("li", {}, el("span", { class: "role", text: `${message.role}: ` }), el("span", { text }));
}

async function copyBody() {
  const text = $("route-body").textContent;
  try {
    await navigator.clipboard.writeText(text);
    $("copy-body").textContent = "Copied";
  } catch (_) {
    const range = document.createRange();
    range.selectNodeContents($("route-body"));
    const selection = getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    $("copy-body").textContent = "Selected: copy it";
  }
  setTimeout(() => ($("copy-body").textContent = "Copy"), 2000);
}

// --- sessions and memories ---------------------------------------------------------------------------

async function lookUpSession(event) {
  event.preventDefault();
  show($("session-error"), false);
  const id = $("session-id").value.trim();
  let session;
  try {
    session = await api("GET", `v1/sessions/${encodeURIComponent(id)}/messages`);
  } catch (error) {
    fail($("session-error"), error);
    show($("session-messages"), false);
    return;
  }
  const body = clear($("session-messages").tBodies[0]);
  for (const message of session.messages) {
    const item = messageItem(message);
    body.append(
      el(
        "tr",
        {},
        el("td", { text: String(message.seq ?? "") }),
        el("td", { text: message.role }),
        el("td", { class: "content", text: item.lastChild.textContent }),
        el("td", { class: "source", text: message.source || "" }),
        el("td", { text: message.namespace || "" }),
        el("td", { text: when(message.stored_at) }),
      ),
    );
  }
  show($("session-messages"), session.messages.length > 0);
  show($("session-empty"), session.messages.length === 0);
}

function memoriesPath(user) {
  return `v1/users/${encodeURIComponent(user)}/memories`;
}

async function loadMemories(event) {
  if (event) event.preventDefault();
  show($("memory-error"), false);
  const user = $("memory-user").value.trim();
  const namespace = $("memory-namespace").value;
  let found;
  try {
    found = await api("GET", memoriesPath(user) + (namespace ? `?namespace=${encodeURIComponent(namespace)}` : ""));
  } catch (error) {
    fail($("memory-error"), error);
    show($("memory-panel"), false);
    return;
  }
  const list = clear($("memories"));
  for (const memory of found.memories) {
    const meta = `${memory.namespace || "every namespace"} · ${when(memory.created_at)}${memory.session_id ? ` · session ${memory.session_id}` : ""}`;
    list.append(
      el(
        "li",
        { class: "memory", "data-id": memory.id },
        el("span", { class: "memory-text", text: memory.text }),
        el("span", { class: "muted", text: ` ${meta} ` }),
        el("button", { type: "button", class: "small danger", text: "Delete", onclick: () => deleteMemory(user, memory.id) }),
      ),
    );
  }
  show($("memories-empty"), found.memories.length === 0);
  show($("delete-all"), found.memories.length > 0);
  show($("memory-panel"), true);
}

async function deleteMemory(user, id) {
  try {
    await api("DELETE", `${memoriesPath(user)}/${encodeURIComponent(id)}`);
  } catch (error) {
    fail($("memory-error"), error);
    return;
  }
  await loadMemories();
}

async function deleteAll() {
  const user = $("memory-user").value.trim();
  if (!confirm(`Delete every memory of user ${user}?`)) return;
  try {
    await api("DELETE", memoriesPath(user));
  } catch (error) {
    fail($("memory-error"), error);
    return;
  }
  await loadMemories();
}

// --- views and start-up ------------------------------------------------------------------------------

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
