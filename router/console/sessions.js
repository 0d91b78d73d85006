// Sessions and memories: a session's stored messages, a user's memories and their deletion.
import { $, api, clear, describe, el, fail, show, when } from "./core.js";

export async function lookUpSession(event) {
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
    const { role, text } = describe(message);
    body.append(
      el(
        "tr",
        {},
        el("td", { text: String(message.seq ?? "") }),
        el("td", { text: role }),
        el("td", { class: "content", text }),
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

// The user and namespace whose memories are listed: "Delete all" deletes those, whatever the fields say since.
let listed = null;

export async function loadMemories(event) {
  if (event) event.preventDefault();
  show($("memory-error"), false);
  const user = event || !listed ? $("memory-user").value.trim() : listed.user;
  const namespace = event || !listed ? $("memory-namespace").value : listed.namespace;
  let found;
  try {
    const query = new URLSearchParams();
    if (namespace) query.set("namespace", namespace);
    if ($("memory-superseded").checked) query.set("include", "superseded");
    found = await api("GET", memoriesPath(user) + (query.size ? `?${query}` : ""));
  } catch (error) {
    fail($("memory-error"), error);
    show($("memory-panel"), false);
    return;
  }
  listed = { user, namespace };
  const list = clear($("memories"));
  for (const memory of found.memories) {
    const until = memory.expires_at ? ` · until ${when(memory.expires_at)}` : "";
    const status = memory.status && memory.status !== "current" ? ` · ${memory.status}` : "";
    const meta = `${memory.namespace || "every namespace"} · ${when(memory.created_at)}${until}${memory.session_id ? ` · session ${memory.session_id}` : ""}${status}`;
    list.append(
      el(
        "li",
        { class: `memory ${memory.status || "current"}`, "data-id": memory.id },
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

export async function deleteAll() {
  if (!listed) return;
  const { user, namespace } = listed;
  const where = namespace ? ` in namespace ${namespace}` : "";
  if (!confirm(`Delete every memory of user ${user}${where}?`)) return;
  try {
    await api("DELETE", memoriesPath(user) + (namespace ? `?namespace=${encodeURIComponent(namespace)}` : ""));
  } catch (error) {
    fail($("memory-error"), error);
    return;
  }
  await loadMemories();
}
