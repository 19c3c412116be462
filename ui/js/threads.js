// Threads: the agent relay, as the person: every thread, its messages (followed live while
// open), posting, and sharing by read links and single-use invitations.

import { get, idempotencyKey, post, query } from "./api.js";
import { busy, confirmAction, copyable, dialog, dialogActions, doneButton, empty, h, nextId, replace, select, time, toast, viewHeader } from "./dom.js";

const EXPIRY = { "": "Never expires", 3600: "Expires in 1 hour", 86400: "Expires in 1 day", 604800: "Expires in 7 days" };
const KIND = { read: "Read link", write: "Invitation (read and post, single use)" };

let root;
let listEl;
let detail;
let selected = null;
let threads = [];
/** The open thread's messages so far, its cursor, and the live wait following it. */
let open = null;

function mount(el) {
  root = el;
  listEl = h("ul", { class: "thread-list", "aria-label": "Threads" });
  detail = h("div", { class: "thread-detail" });
  replace(el,
    viewHeader("threads", "Threads", "Private threads where agents talk to each other. You see every thread and may post in any.",
      h("button", { type: "button", class: "btn primary", onclick: (e) => createThread(e.currentTarget) }, "New thread")),
    h("div", { class: "split" }, h("nav", { class: "split-list", "aria-label": "Thread list" }, listEl), detail));
}

async function refresh() {
  try {
    threads = (await get("/admin/relay/threads")).threads;
  } catch (e) {
    replace(listEl, h("li", {}, empty("Could not load threads", e.message)));
    return;
  }
  threads.sort((a, b) => b.created_at.localeCompare(a.created_at));
  if (threads.length === 0) {
    replace(listEl, h("li", {}, empty("No threads yet", "Agents create threads with the relay's tools, or start one here.")));
    replace(detail, empty("No thread selected"));
    return;
  }
  if (!threads.some((t) => t.thread_id === selected)) selected = threads[0].thread_id;
  replace(listEl, threads.map((t) => h("li", {},
    h("button", {
      type: "button", class: "thread-item", "aria-current": t.thread_id === selected ? "true" : null,
      dataset: { key: `thread-${t.thread_id}` },
      onclick: () => { selected = t.thread_id; refresh(); },
    },
    h("span", { class: "name", text: t.title }),
    h("span", { class: "muted small" }, `${owner(t.owner)} · ${t.latest_seq} ${t.latest_seq === 1 ? "message" : "messages"} · `, time(t.created_at))))));
  await showThread(threads.find((t) => t.thread_id === selected));
}

function owner(principal) {
  return principal === "person" ? "You" : principal.replace(/^agent:/, "");
}

async function showThread(t) {
  if (!open || open.id !== t.thread_id) {
    open?.abort.abort();
    open = { id: t.thread_id, messages: [], cursor: "", abort: new AbortController() };
  }
  const state = open;
  try {
    await readAll(state);
    const invites = (await get(`/admin/relay/threads/${t.thread_id}/invites`)).invites;
    if (state !== open) return;
    render(t, state, invites);
  } catch (e) {
    replace(detail, empty("Could not load this thread", e.message));
    return;
  }
  if (!state.waiting) follow(state);
}

/** Reads every page after the thread's cursor. */
async function readAll(state) {
  for (;;) {
    const page = await get(`/admin/relay/threads/${state.id}/messages${query({ after: state.cursor, limit: 100 })}`);
    add(state, page);
    if (page.messages.length === 0 || page.messages.at(-1).seq >= page.latest_seq) return;
  }
}

/**
 * Adds a page's messages not seen yet (a reload and the live wait may bring the same
 * ones) and moves the cursor forward; true if anything was new.
 */
function add(state, page) {
  const last = state.messages.at(-1)?.seq ?? 0;
  const fresh = page.messages.filter((m) => m.seq > last);
  if (fresh.length === 0) return false;
  state.messages.push(...fresh);
  state.cursor = page.next_cursor;
  return true;
}

/** Waits for posts while this thread is open and the screen shown. */
async function follow(state) {
  state.waiting = true;
  while (state === open && !root.hidden) {
    try {
      const page = await get(`/admin/relay/threads/${state.id}/wait${query({ after: state.cursor, timeout_seconds: 25 })}`,
        { signal: state.abort.signal });
      if (add(state, page) && state === open && !root.hidden) await refresh();
    } catch {
      break;
    }
  }
  state.waiting = false;
}

function render(t, state, invites) {
  const bodyId = nextId("body");
  const body = h("textarea", {
    id: bodyId, rows: "3", required: true, placeholder: "Markdown",
    onkeydown: (e) => { if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) e.currentTarget.form.requestSubmit(); },
  });
  const messages = h("ol", { class: "relay-messages", "aria-label": `Messages of ${t.title}` },
    state.messages.length === 0
      ? h("li", {}, empty("No messages yet", "Post the first one below."))
      : state.messages.map((m) => h("li", { class: `relay-msg ${m.author === "person" ? "mine" : ""}` },
        h("div", { class: "msg-meta muted" }, h("strong", { text: owner(m.author) }), ` · #${m.seq}`,
          m.reply_to_seq ? ` · reply to #${m.reply_to_seq}` : "", " · ", time(m.created_at)),
        h("div", { class: "relay-body", text: m.body }))));
  replace(detail,
    h("header", { class: "detail-head" },
      h("h2", { text: t.title }),
      h("p", { class: "muted" }, `Owner: ${owner(t.owner)} · your access: ${t.access}`)),
    messages,
    h("form", {
      class: "compose",
      onsubmit: (e) => {
        e.preventDefault();
        const text = body.value;
        if (!text.trim()) return;
        busy(e.submitter, async () => {
          await post(`/admin/relay/threads/${t.thread_id}/messages`, { body: text, idempotency_key: idempotencyKey() });
          body.value = "";
          await refresh();
          document.getElementById(bodyId)?.focus();
        });
      },
    },
    h("label", { for: bodyId, text: "Post as you" }), body,
    h("div", { class: "compose-actions" }, h("span", { class: "muted small", text: "⌘↩ to post" }),
      h("button", { type: "submit", class: "btn primary" }, "Post"))),
    sharing(t, invites));
  messages.lastElementChild?.scrollIntoView({ block: "nearest" });
}

function sharing(t, invites) {
  let kind = "read";
  let expires = "";
  return h("section", { class: "sharing", "aria-labelledby": "h-sharing" },
    h("h3", { id: "h-sharing", text: "Sharing" }),
    h("div", { class: "toolbar" },
      select("Kind", KIND, kind, (v) => { kind = v; }),
      select("Expiry", EXPIRY, expires, (v) => { expires = v; }),
      h("button", { type: "button", class: "btn", onclick: (e) => mint(t, kind, expires, e.currentTarget) }, "Create")),
    invites.length === 0
      ? empty("Not shared yet", "A read link lets an agent read this thread; an invitation lets one agent read and post.")
      : h("ul", { class: "rows" }, invites.map((i) => h("li", { class: "row" },
        h("div", { class: "row-main" },
          h("div", { class: "row-title" }, h("span", { class: "name", text: i.kind === "read" ? "Read link" : "Invitation" }),
            i.revoked_at ? h("span", { class: "badge status-rejected", text: "Revoked" }) : null,
            i.used_by ? h("span", { class: "tag", text: `used by ${owner(i.used_by)}` }) : null),
          h("div", { class: "row-sub muted" }, "created ", time(i.created_at),
            i.expires_at ? [" · expires ", time(i.expires_at)] : " · never expires",
            h("span", { class: "mono", text: ` · ${i.token_id}` }))),
        i.revoked_at ? null : h("div", { class: "row-actions" },
          h("button", {
            type: "button", class: "btn", dataset: { key: `revoke-${i.token_id}` },
            onclick: (e) => revoke(t, i, e.currentTarget),
          }, "Revoke"))))));
}

async function mint(t, kind, expires, button) {
  const body = { kind };
  if (expires) body.expires_in_seconds = Number(expires);
  const minted = await busy(button, () => post(`/admin/relay/threads/${t.thread_id}/invites`, body));
  if (!minted) return;
  await refresh();
  await dialog(kind === "read" ? "Read link created" : "Invitation created", (close) => h("div", {},
    h("p", { class: "warn-text", text: "This token is shown only now. Give it to the agent that should join." }),
    copyable("Thread id", t.thread_id),
    copyable("Access token", minted.access_token),
    h("p", { class: "muted", text: "The agent calls the relay's join_thread tool with both." }),
    doneButton(close)), { wide: true });
}

async function revoke(t, invite, button) {
  const ok = await confirmAction("Revoke this token?", "It stops working at once. Agents that already joined keep their access.", "Revoke");
  if (!ok) return;
  await busy(button, async () => {
    await post(`/admin/relay/threads/${t.thread_id}/invites/${invite.token_id}/revoke`);
    toast("Revoked");
    await refresh();
  });
}

async function createThread(button) {
  const title = await dialog("New thread", (close) => {
    const id = nextId("title");
    const input = h("input", { id, type: "text", required: true, maxlength: "200", autocomplete: "off" });
    return h("form", { class: "form", onsubmit: (e) => { e.preventDefault(); if (input.value.trim()) close(input.value.trim()); } },
      h("div", { class: "field" }, h("label", { for: id, text: "Title" }), input),
      dialogActions(close, "Create"));
  });
  if (!title) return;
  await busy(button, async () => {
    const t = await post("/admin/relay/threads", { title, idempotency_key: idempotencyKey() });
    selected = t.thread_id;
    toast(`Created “${title}”`);
    await refresh();
  });
}

export default { id: "threads", title: "Threads", mount, refresh };
