// Shared by the views: the API with the tab's key, and DOM helpers that only ever set text.
export const KEY = "router.apiKey";

export const VIEWS = ["catalogs", "try", "sessions", "health"];

export const state = { key: sessionStorage.getItem(KEY), status: null, timer: null, explain: true };

export const $ = (id) => document.getElementById(id);

export function el(tag, props = {}, ...children) {
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

export function clear(node) {
  node.replaceChildren();
  return node;
}

export function show(node, visible) {
  node.hidden = !visible;
  return node;
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? body.detail : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

// One API call with the tab's key; a 401 asks for a key again.

export async function api(method, path, body) {
  const headers = { accept: "application/json" };
  if (state.key) headers.authorization = `Bearer ${state.key}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    // No answer at all ("Failed to fetch"): say so in the router's words.
    throw new ApiError(0, { detail: `The router cannot be reached (${error.message}); retrying.` });
  }
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

export function askKey(message) {
  state.key = null;
  sessionStorage.removeItem(KEY);
  $("key-error").textContent = message;
  show($("key-panel"), true);
  show($("views"), false);
  show($("forget-key"), false);
}

export function banner(error) {
  const node = $("banner");
  node.textContent = error ? `${error.message}` : "";
  show(node, Boolean(error));
}

export function fail(node, error) {
  node.textContent = error.body && error.body.error ? `${error.body.error}: ${error.message}` : error.message;
  show(node, true);
}

export function when(seconds) {
  if (seconds === null || seconds === undefined) return "";
  return new Date(seconds * 1000).toLocaleString();
}

export function fixed(value, digits = 3) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

export function pairs(target, entries) {
  clear(target);
  for (const [name, value] of entries) {
    target.append(el("dt", { text: name }), el("dd", { text: value }));
  }
}

function partText(part) {
  if (part && typeof part.text === "string") return part.text;
  if (part && part.type === "tool_use") return `[calls ${part.name || ""}]`; // Anthropic
  if (part && part.type === "tool_result") return contentText(part.content);
  return JSON.stringify(part);
}

export function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map(partText).join(" ");
  return content === null || content === undefined ? "" : JSON.stringify(content);
}

// A stored message's role and text, in any of the shapes posted: Chat Completions, Anthropic, and the
// Responses API's items, which have a type and no role ("function_call", "function_call_output").
export function describe(message) {
  if (message.type === "function_call") return { role: "assistant", text: `[calls ${message.name || ""}]` };
  if (message.type === "function_call_output") return { role: "tool", text: contentText(message.output) };
  const calls = (message.tool_calls || []).map((c) => (c.function ? c.function.name : "")).filter(Boolean);
  const text = contentText(message.content) + (calls.length ? ` [calls ${calls.join(", ")}]` : "");
  return { role: message.role || message.type || "", text };
}

export function messageItem(message) {
  const { role, text } = describe(message);
  return el("li", {}, el("span", { class: "role", text: `${role}: ` }), el("span", { text }));
}
