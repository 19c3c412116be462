// Inbox: recent messages of allowed channels, and which agents read each; a search box
// that searches them with the engine agents use (search_messages), as the person, who sees
// every approved channel.

import { get, post, query } from "./api.js";
import { SOURCE, busy, empty, h, load, nextId, replace, secretTag, time, toast, viewHeader, withSecrets } from "./dom.js";

let list;
let search = "";

function mount(el) {
  list = h("div", { class: "list-area", "aria-live": "polite" });
  const searchId = nextId("inbox-search");
  let timer = null;
  const box = h("form", { class: "field inline search messages-search", role: "search", onsubmit: (e) => e.preventDefault() },
    h("label", { for: searchId, class: "visually-hidden", text: "Search messages" }),
    h("input", {
      id: searchId, type: "search", placeholder: "Search messages: words or \"a phrase\"", autocomplete: "off",
      oninput: (e) => {
        clearTimeout(timer);
        timer = setTimeout(() => { search = e.target.value.trim(); refresh(); }, 250);
      },
    }));
  replace(el, viewHeader("inbox", "Inbox", "Recent messages of the channels agents may read, and which agents read each.", box), list);
}

async function refresh() {
  if (search) return showSearch();
  const data = await load(list, "/admin/inbox?limit=100", "the inbox");
  if (!data) return;
  if (data.messages.length === 0) {
    replace(list, empty("No messages yet", "Messages of the channels you approve appear here."));
    return;
  }
  replace(list, h("ul", { class: "rows inbox" }, data.messages.map((m) => item(m))));
}

async function showSearch() {
  const data = await load(list, `/admin/search${query({ query: search, limit: 50 })}`, "the search");
  if (!data) return;
  const progress = (await get("/healthz").catch(() => ({}))).search_index;
  const partial = progress
    ? h("p", { class: "muted", role: "note",
      text: `Older messages are still being indexed (${Math.floor((progress.done * 100) / Math.max(progress.total, 1))}%): some older matches may be missing.` })
    : null;
  if (data.results.length === 0) {
    replace(list, partial, empty(`Nothing matches “${search}”`, "Every word must appear; put a phrase in quotes."));
    return;
  }
  replace(list, partial, h("ul", { class: "rows inbox", "aria-label": `Messages matching ${search}` },
    data.results.map((r) => item(r.message, r.excerpt))));
}

/** The excerpt, its matched words (between [ and ]) marked. */
function marked(excerpt) {
  return excerpt.split(/(\[[^\]]*\])/).filter(Boolean).map((part) =>
    part.startsWith("[") && part.endsWith("]") ? h("mark", { text: part.slice(1, -1) }) : part);
}

function item(m, excerpt) {
  const outbound = m.direction === "outbound";
  const who = outbound ? `${m.agent_id ?? "An agent"} via AMC` : m.sender.is_self ? "You" : (m.sender.display_name ?? m.sender.id);
  const readBy = m.read_by ?? [];
  // The person's own messages are never unread for an agent: nothing waits to be read there.
  const reads = excerpt !== undefined
    ? null
    : outbound
      ? h("span", { class: "muted", text: "Sent by an agent" })
      : readBy.length
        ? h("span", { class: "reads" }, h("span", { class: "muted", text: "Read by " }), readBy.map((a) => h("span", { class: "chip", text: a })))
        : m.sender.is_self ? null : h("span", { class: "muted", text: "Not read by any agent yet" });
  return h("li", { class: "row message", dataset: { message: m.id } },
    h("div", { class: "row-main" },
      h("div", { class: "row-title" },
        h("span", { class: "name", text: m.channel.name }),
        m.thread ? h("span", { class: "muted", text: `› ${m.thread.name}`, title: "A thread of this channel" }) : null,
        h("span", { class: "tag", text: SOURCE[m.source] ?? m.source }),
        secretTag(m),
        h("span", { class: "muted" }, time(m.sent_at))),
      h("p", { class: "message-text" }, h("span", { class: "sender", text: `${who}: ` }),
        m.unsent ? h("em", { text: "(unsent) " }) : null, excerpt !== undefined ? marked(excerpt) : withSecrets(m),
        m.attachments.length ? h("span", { class: "muted", text: ` · ${m.attachments.length} ${m.attachments.length === 1 ? "attachment" : "attachments"}` }) : null),
      reads ? h("div", { class: "row-sub" }, reads) : null),
    codeButton(m));
}

/** For a message AMC found a code or a link in: "Not a code" (agents are then given it
 *  whole); for one the person said holds none, the way back. */
function codeButton(m) {
  if (!m.secrets?.length && !m.not_a_code) return null;
  const back = Boolean(m.not_a_code);
  return h("div", { class: "row-actions" },
    back ? h("span", { class: "tag", text: "Not a code (you said)" }) : null,
    h("button", {
      type: "button",
      class: "btn small",
      text: back ? "It is a code" : "Not a code",
      title: back
        ? "Hide what AMC finds in this message from agents again."
        : "Tell AMC this message holds no one-time code or sign-in link: agents are given it whole.",
      onclick: (e) => busy(e.currentTarget, async () => {
        await post(`/admin/messages/${encodeURIComponent(m.id)}/not-a-code`, { not_a_code: !back });
        toast(back ? "Hidden from agents again" : "Agents are given this message whole", "info");
        refresh();
      }),
    }));
}

export default { id: "inbox", title: "Inbox", mount, refresh };
