// Try a turn: POST /v1/route with "explain": true, the ranked functions and the parts of their scores.
import { $, api, clear, el, fail, fixed, messageItem, show, state } from "./core.js";

export function addMessage(role = "user", content = "") {
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

export async function tryTurn(event) {
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
  if (info.part) box.append(part("found for", `“${info.part}”`));
  box.append(part("weights", `dense ${fixed(weights.dense, 2)} · lexical ${fixed(weights.lexical, 2)} · usage ${fixed(weights.usage, 2)}`));
  const example = info.example
    ? el("span", {}, `“${info.example.text}” `, el("span", {
        class: "muted",
        text: `similarity ${fixed(info.example.similarity)} · ${info.example.runs} stored ${info.example.runs === 1 ? "run asks" : "runs ask"} the same`,
      }))
    : el("span", { class: "muted", text: "none" });
  box.append(el("div", { class: "example" }, el("span", { class: "muted", text: "usage example " }), example));
  return box;
}

// What the model will not be given, though the list shows it: said beside the ranking.
function caveats(routed) {
  const notes = [];
  if (routed.degraded) notes.push("Storage could not be reached: only the pinned functions are routed, with no history nor memories.");
  const below = routed.below_min_score || 0;
  if (below) notes.push(`${below} of the best functions scored under min_score and were left out.`);
  return notes;
}

function renderRoute(body, routed) {
  const ranked = clear($("ranked"));
  const explained = routed.functions.some((f) => f.explanation);
  const notes = [...caveats(routed), ...(explained ? [] : ["This router does not explain its scores."])];
  $("try-note").textContent = notes.join(" ");
  show($("try-note"), notes.length > 0);
  const leftOut = new Map((routed.left_out || []).map((item) => [item.name, item.reason]));
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
    // Found, but kept out of the tool list the model gets (the API would refuse it): say so on it.
    if (leftOut.has(fn.name)) item.append(el("p", { class: "left-out", text: `Not in tools: ${leftOut.get(fn.name)}` }));
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

export async function copyBody() {
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
