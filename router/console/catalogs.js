// The Catalogs and Health views, drawn from GET /v1/status.
import { $, api, clear, el, fixed, pairs, show, when } from "./core.js";

function describeSync(sync) {
  if (!sync) return "";
  const counts = Object.entries(sync.counts || {})
    .filter(([name, n]) => n && name !== "namespace")
    .map(([name, n]) => `${n} ${name}`)
    .join(", ");
  const detail = sync.detail ? `: ${sync.detail}` : "";
  return `${sync.outcome}${counts ? ` (${counts})` : ""}${detail} · ${when(sync.at)}`;
}

export function renderCatalogs(status) {
  const generation = status.generation;
  $("generation").textContent = generation
    ? `Active generation ${generation.id}: ${generation.provider} model ${generation.model}, ` +
      `text template "${generation.text}", ` +
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
      el("td", { class: sync && sync.outcome.match(/failed|rejected|kept/) ? "error" : "", text: describeSync(sync) }),
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

let opened = null;
let opening = 0; // the latest openCatalog call: an earlier one answering late shows nothing

function percent(rate) {
  return `${(rate * 100).toFixed(1)}%`;
}

// How often the model called a function its turn had not been routed: GET /v1/catalogs/{namespace}/misses.
async function showMisses(namespace) {
  const panel = show($("misses"), false);
  let misses;
  try {
    misses = await api("GET", `v1/catalogs/${encodeURIComponent(namespace)}/misses?limit=10`);
  } catch (error) {
    if (opened !== namespace) return;
    $("miss-rate").textContent = `Misses unavailable: ${error.message}`;
    show(panel, true);
    return;
  }
  if (opened !== namespace) return; // another catalog was opened meanwhile
  const { routed, searched, missed } = misses.counts;
  $("miss-rate").textContent =
    misses.miss_rate === null
      ? "No call checked yet: only calls after a route or tool search with a session_id are checked."
      : `Miss rate ${percent(misses.miss_rate)}: ${missed} of ${misses.checked} calls checked ` +
        `(${routed} routed, ${searched} found by a tool search).`;
  const functions = clear($("missed-functions").tBodies[0]);
  for (const fn of misses.most_missed) {
    functions.append(
      el("tr", {}, el("td", { class: "name", text: fn.name }), el("td", { class: "misses", text: String(fn.misses) })),
    );
  }
  show($("missed-functions"), misses.most_missed.length > 0);
  const calls = clear($("missed-calls").tBodies[0]);
  for (const call of misses.latest) {
    calls.append(
      el(
        "tr",
        {},
        el("td", { class: "name", text: call.function }),
        el("td", { class: "content request", text: call.request }),
        el("td", { class: "routed", text: call.routed.join(", ") || "–" }),
        el("td", { text: call.session_id }),
        el("td", { text: when(call.at) }),
      ),
    );
  }
  show($("missed-calls"), misses.latest.length > 0);
  show(panel, true);
}

async function openCatalog(namespace) {
  const list = clear($("functions"));
  $("catalog-title").textContent = `${namespace}: loading…`;
  show($("catalog"), true);
  opened = namespace;
  const call = ++opening;
  showMisses(namespace);
  let catalog;
  try {
    catalog = await api("GET", `v1/catalogs/${encodeURIComponent(namespace)}`);
  } catch (error) {
    if (call !== opening) return;
    $("catalog-title").textContent = `${namespace}: ${error.message}`;
    return;
  }
  if (call !== opening) return; // opened again meanwhile (this catalog or another): that list is the one shown
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

export function renderNamespaces(status) {
  const names = status.catalogs.map((c) => c.namespace);
  for (const [id, keep] of [["try-namespace", false], ["memory-namespace", true]]) {
    const select = $(id);
    const current = select.value;
    const fixedOptions = keep ? [select.options[0]] : [];
    select.replaceChildren(...fixedOptions, ...names.map((n) => el("option", { value: n, text: n })));
    if (names.includes(current) || (keep && current === "")) select.value = current;
  }
}

export function renderHealth(status) {
  pairs(
    $("health-ready"),
    [["ready", status.ready ? "yes" : "no"], ...Object.entries(status.checks).map(([k, v]) => [k, v ? "ok" : k === "embedding" ? "failing" : "waiting"])],
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
      ? embedding.provider === "local"
        ? [
            ["provider", "local"],
            ["model", embedding.model],
            ["dimension", String(embedding.dimension)],
            ["device", embedding.device],
            ["threads", String(embedding.threads)],
            ["query lanes", String(embedding.lanes)],
          ]
        : [
            ["provider", embedding.provider],
            ["service", embedding.url],
            ["model", embedding.model],
            ["dimension", String(embedding.dimension)],
            ...(embedding.query_prefix ? [["query prefix", JSON.stringify(embedding.query_prefix)]] : []),
            ...(embedding.document_prefix ? [["document prefix", JSON.stringify(embedding.document_prefix)]] : []),
            ...(embedding.query_input_type ? [["query input_type", embedding.query_input_type]] : []),
            ...(embedding.document_input_type ? [["document input_type", embedding.document_input_type]] : []),
            ["requests at once", String(embedding.concurrency)],
            ["state", embedding.failure ? `failing: ${embedding.failure}` : "answering"],
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
