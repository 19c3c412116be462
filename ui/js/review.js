// Review: Claude Code sessions asking to use a tool, agents' sends held for the person
// (with their conversation and attachments), the log of every send with its outcome, and
// the log of tool decisions.

import { download, fileAsDataUrl, post, query } from "./api.js";
import { SOURCE, busy, dialog, dialogActions, empty, h, load, nextId, replace, secretTag, select, time, toast, viewHeader, withSecrets } from "./dom.js";

export const STATUS = {
  held: "Waiting for review",
  sending: "Sending",
  sent: "Sent",
  failed: "Failed",
  rejected: "Rejected",
  unknown: "Outcome unknown",
};
const IMAGE = /\.(png|jpe?g|gif|webp)$/i;

export const DECISION = {
  pending: "Waiting for you",
  allowed: "Allowed",
  denied: "Denied",
  gone: "Session ended",
};

let tools;
let decisions;
let queue;
let log;
let logFilter = "";
let refreshAll;
/** Image previews already loaded, by send and index, so live reloads do not refetch them. */
const previews = new Map();

function mount(el, app) {
  refreshAll = app.refresh;
  tools = h("div", { class: "cards" });
  decisions = h("div", { class: "list-area" });
  queue = h("div", { class: "cards" });
  log = h("div", { class: "list-area" });
  const filter = select("Show", { "": "All sends", ...STATUS }, logFilter, (v) => { logFilter = v; loadLog(); });
  replace(el,
    viewHeader("review", "Review", "Agents' sends to channels set to review, sent while agents are paused, or that could carry one conversation's words into another wait here for you, with Claude Code's requests to use a tool."),
    h("section", { class: "panel", "aria-labelledby": "h-tools", dataset: { section: "tools" } },
      h("h2", { id: "h-tools", class: "section-title", text: "Tool requests" }), tools),
    h("section", { class: "panel", "aria-labelledby": "h-queue" },
      h("h2", { id: "h-queue", class: "section-title", text: "Waiting for you" }), queue),
    h("section", { class: "panel", "aria-labelledby": "h-log" },
      h("div", { class: "section-head" }, h("h2", { id: "h-log", class: "section-title", text: "All sends" }), filter),
      log),
    h("section", { class: "panel", "aria-labelledby": "h-decisions" },
      h("h2", { id: "h-decisions", class: "section-title", text: "Tool decisions" }), decisions));
}

async function refresh() {
  await Promise.all([loadTools(), loadQueue(), loadLog(), loadDecisions()]);
}

async function loadTools() {
  const data = await load(tools, "/admin/tool-requests?status=pending&limit=500", "tool requests");
  if (!data) return;
  if (data.tool_requests.length === 0) {
    replace(tools, empty("No tool requests", "When a Claude Code session started with the AMC channel asks to use a tool, you can answer here."));
    return;
  }
  // Oldest first: the person answers in the order sessions asked.
  replace(tools, data.tool_requests.slice().reverse().map(toolCard));
}

function toolCard(t) {
  const titleId = `tool-title-${t.id}`;
  const decide = (verb, label) => h("button", {
    type: "button", class: verb === "allow" ? "btn primary" : "btn", dataset: { key: `${verb}-${t.id}` },
    "aria-describedby": titleId,
    onclick: (e) => busy(e.currentTarget, async () => {
      await post(`/admin/tool-requests/${t.id}/${verb}`);
      toast(`${verb === "allow" ? "Allowed" : "Denied"}: ${t.tool_name} for ${t.agent_id}`);
      refreshAll();
    }),
  }, label);
  return h("article", { class: "card tool-card", "aria-labelledby": titleId, dataset: { toolRequest: t.id } },
    h("header", { class: "card-head" },
      h("h3", { id: titleId },
        h("span", { class: "agent", text: t.agent_id }), h("span", { class: "muted", text: " asks to use " }),
        h("span", { class: "mono", text: t.tool_name })),
      h("span", { class: "muted" }, time(t.created_at))),
    t.description ? h("p", { class: "tool-description", text: t.description }) : null,
    t.input_preview ? h("pre", { class: "tool-input", "aria-label": "The tool's input", text: t.input_preview }) : null,
    h("div", { class: "card-actions" }, decide("deny", "Deny"), decide("allow", "Allow")));
}

async function loadDecisions() {
  const data = await load(decisions, "/admin/tool-requests?limit=100", "the tool decisions");
  if (!data) return;
  const done = data.tool_requests.filter((t) => t.status !== "pending");
  if (done.length === 0) {
    replace(decisions, empty("No tool decisions yet", "Every tool request and your answer to it is kept here."));
    return;
  }
  replace(decisions, h("table", { class: "table log decisions" },
    h("caption", { class: "visually-hidden", text: "Tool requests and decisions, newest first" }),
    h("thead", {}, h("tr", {}, ["Asked", "Agent", "Tool", "What", "Decision"].map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, done.map((t) =>
      h("tr", { dataset: { toolRequest: t.id } },
        h("td", {}, time(t.created_at)),
        h("td", { text: t.agent_id }),
        h("td", { class: "mono", text: t.tool_name }),
        h("td", { class: "text-cell" }, h("span", { class: "clip", text: t.description || t.input_preview })),
        h("td", {}, h("span", { class: `badge decision-${t.status}`, text: DECISION[t.status] ?? t.status }),
          t.decided_at ? h("span", { class: "note muted" }, time(t.decided_at)) : null, via(t.decided_via)))))));
}

async function loadQueue() {
  const data = await load(queue, "/admin/sends?status=held&limit=500", "the review queue");
  if (!data) return;
  if (data.sends.length === 0) {
    replace(queue, empty("Nothing to review", "When an agent sends to a channel set to review, the message waits here."));
    return;
  }
  // Oldest first: the person answers in the order agents asked.
  replace(queue, data.sends.slice().reverse().map(card));
  // Each conversation opens at its newest message: the one being answered.
  for (const list of queue.querySelectorAll(".conversation")) list.scrollTop = list.scrollHeight;
}

/**
 * Where a held send may carry words from: other conversations its agent read that not
 * everyone here can read. For a send the channel's policy would let go, that is why it
 * waits. Relay threads are named as such: their titles are the agents' own.
 */
function crossing(s) {
  if (!s.read_from?.length) return null;
  const why = s.held_reason === "crosses_conversations"
    ? `Held because ${s.agent_id} read other conversations that not everyone here can read. It may carry their words to ${s.channel_name}.`
    : `${s.agent_id} also read other conversations that not everyone here can read. This may carry their words to ${s.channel_name}.`;
  return h("div", { class: "crossing note warn-text", role: "note" },
    h("p", { text: why }),
    h("p", { class: "muted", text: "Read from:" }),
    h("ul", { class: "read-from", "aria-label": "Conversations the agent read" },
      s.read_from.map((r) => h("li", {},
        r.conversation.startsWith("ch_") ? null : "Relay thread ",
        h("bdi", { text: r.name || "a conversation" }), " · ", time(r.read_at)))));
}

function card(s) {
  const titleId = `send-title-${s.id}`;
  return h("article", { class: "card send-card", "aria-labelledby": titleId, dataset: { send: s.id } },
    h("header", { class: "card-head" },
      h("h3", { id: titleId },
        h("span", { class: "agent", text: s.agent_id }), h("span", { class: "muted", text: " → " }),
        h("bdi", { text: s.channel_name })),
      h("span", { class: "muted" }, SOURCE[s.source] ?? s.source, " · ", time(s.created_at))),
    h("ol", { class: "conversation", "aria-label": `Latest messages with ${s.channel_name}` },
      s.conversation.map(bubble)),
    crossing(s),
    h("div", { class: "draft" },
      h("p", { class: "draft-label", text: `${s.agent_id} wants to send:` }),
      h("p", { class: "bubble out draft-text", text: s.text || "(no text)" }),
      s.attachments.length ? h("ul", { class: "attachments", "aria-label": "Attachments" }, s.attachments.map((a, i) => attachment(s, a, i))) : null),
    h("div", { class: "card-actions" },
      h("button", {
        type: "button", class: "btn", dataset: { key: `reject-${s.id}` }, "aria-describedby": titleId,
        onclick: (e) => reject(s, e.currentTarget),
      }, "Reject…"),
      h("button", {
        type: "button", class: "btn primary", dataset: { key: `approve-${s.id}` }, "aria-describedby": titleId,
        onclick: (e) => busy(e.currentTarget, async () => {
          const done = await post(`/admin/sends/${s.id}/approve`);
          if (done.status === "sent") toast(`Sent to ${s.channel_name}`);
          else if (done.status === "failed") toast(`Not sent: ${done.error_message ?? "the platform failed"}`, "error");
          else toast(`${STATUS[done.status] ?? done.status}: ${s.channel_name}`, done.status === "unknown" ? "error" : "info");
          refreshAll();
        }),
      }, "Approve and send")));
}

function bubble(m) {
  const mine = m.sender.is_self || m.direction === "outbound";
  const who = m.direction === "outbound" ? `${m.agent_id ?? "agent"} (via AMC)` : m.sender.is_self ? "You" : (m.sender.display_name ?? m.sender.id);
  return h("li", { class: `msg ${mine ? "out" : "in"}` },
    h("span", { class: "msg-meta muted" }, h("bdi", { text: who }), " · ", time(m.sent_at), " ", secretTag(m)),
    h("span", { class: `bubble ${mine ? "out" : "in"}` }, bubbleText(m)));
}

function bubbleText(m) {
  if (m.unsent) return "(unsent)";
  if (m.text) return withSecrets(m);
  const files = (m.attachments ?? []).map((a) => a.filename ?? "a file");
  return files.length ? `(attachment: ${files.join(", ")})` : "(no text)";
}

function attachment(s, a, i) {
  const path = `/admin/sends/${s.id}/attachments/${i}`;
  const size = `${Math.max(1, Math.round(a.size_bytes / 1024))} KB`;
  const open = h("button", {
    type: "button", class: "btn small", onclick: (e) => busy(e.currentTarget, () => download(path, a.filename)),
  }, `Download ${a.filename} (${size})`);
  if (!IMAGE.test(a.filename)) return h("li", {}, open);
  const img = h("img", { class: "preview", alt: `Preview of ${a.filename}` });
  const key = `${s.id}/${i}`;
  if (previews.has(key)) img.src = previews.get(key);
  else {
    fileAsDataUrl(path).then((url) => {
      previews.set(key, url);
      img.src = url;
    }).catch((e) => img.replaceWith(h("span", { class: "muted", text: `No preview: ${e.message}` })));
  }
  return h("li", {}, img, open);
}

async function reject(s, button) {
  const reason = await dialog(`Reject the message to ${s.channel_name}?`, (close) => {
    const id = nextId("reason");
    const text = h("textarea", { id, rows: "3", maxlength: "1000", placeholder: "Optional" });
    return h("form", { class: "form", onsubmit: (e) => { e.preventDefault(); close({ reason: text.value.trim() }); } },
      h("p", { class: "muted", text: `${s.agent_id} will see that you rejected it.` }),
      h("div", { class: "field" }, h("label", { for: id, text: "Reason for the agent" }), text),
      dialogActions(close, "Reject", { kind: "danger" }));
  });
  if (!reason) return;
  await busy(button, async () => {
    await post(`/admin/sends/${s.id}/reject`, reason.reason ? { reason: reason.reason } : {});
    toast(`Rejected the message to ${s.channel_name}`);
    refreshAll();
  });
}

async function loadLog() {
  const data = await load(log, `/admin/sends${query({ status: logFilter, limit: 100 })}`, "the log");
  if (!data) return;
  if (data.sends.length === 0) {
    replace(log, empty(logFilter ? `No sends with status “${STATUS[logFilter]}”` : "No sends yet", "Every message an agent sends through AMC is listed here."));
    return;
  }
  // The agent and the channel share a column, the channel on a line of its own: so the
  // message keeps a usable width at the narrowest window, and a channel named by a phone
  // number is never broken inside it.
  replace(log, h("table", { class: "table log sends" },
    h("caption", { class: "visually-hidden", text: "Agents' sends, newest first" }),
    h("thead", {}, h("tr", {}, ["When", "Agent → channel", "Message", "Status"].map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, data.sends.map((s) =>
      h("tr", { class: s.status === "unknown" ? "flag" : null, dataset: { send: s.id } },
        h("td", {}, time(s.created_at)),
        h("td", {}, h("span", { class: "log-agent", text: s.agent_id }), " →",
          h("span", { class: "log-channel", text: s.channel_name })),
        h("td", { class: "text-cell" }, h("span", { class: "clip", text: s.text || "(attachments only)" }),
          s.status === "unknown" ? h("span", { class: "note warn-text", text: "The platform did not confirm this send. Check the conversation before anyone sends it again." }) : null,
          s.error_message ? h("span", { class: "note", text: s.error_message }) : null),
        h("td", {}, statusBadge(s.status), via(s.decided_via)))))));
}

/** Where the person decided, when it was not this Mac. */
function via(decidedVia) {
  return decidedVia?.startsWith("phone_") ? h("span", { class: "note muted", dataset: { via: decidedVia }, text: "from your phone" }) : null;
}

/** A status badge; unknown outcomes stand out. */
export function statusBadge(status) {
  return h("span", { class: `badge status-${status}`, text: STATUS[status] ?? status });
}

export default { id: "review", title: "Review", mount, refresh };
