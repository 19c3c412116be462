// Inbox: recent messages of allowed channels, and which agents read each.

import { SOURCE, empty, h, load, replace, time, viewHeader } from "./dom.js";

let list;

function mount(el) {
  list = h("div", { class: "list-area" });
  replace(el, viewHeader("inbox", "Inbox", "Recent messages of the channels agents may read, and which agents read each."), list);
}

async function refresh() {
  const data = await load(list, "/admin/inbox?limit=100", "the inbox");
  if (!data) return;
  if (data.messages.length === 0) {
    replace(list, empty("No messages yet", "Messages of the channels you approve appear here."));
    return;
  }
  replace(list, h("ul", { class: "rows inbox" }, data.messages.map(item)));
}

function item(m) {
  const outbound = m.direction === "outbound";
  const who = outbound ? `${m.agent_id ?? "An agent"} via AMC` : m.sender.is_self ? "You" : (m.sender.display_name ?? m.sender.id);
  const reads = outbound
    ? h("span", { class: "muted", text: "Sent by an agent" })
    : m.read_by.length
      ? h("span", { class: "reads" }, h("span", { class: "muted", text: "Read by " }), m.read_by.map((a) => h("span", { class: "chip", text: a })))
      : h("span", { class: "muted", text: "Not read by any agent yet" });
  return h("li", { class: "row message", dataset: { message: m.id } },
    h("div", { class: "row-main" },
      h("div", { class: "row-title" },
        h("span", { class: "name", text: m.channel.name }),
        h("span", { class: "tag", text: SOURCE[m.source] ?? m.source }),
        h("span", { class: "muted" }, time(m.sent_at))),
      h("p", { class: "message-text" }, h("span", { class: "sender", text: `${who}: ` }),
        m.unsent ? h("em", { text: "(unsent) " }) : null, m.text,
        m.attachments.length ? h("span", { class: "muted", text: ` · ${m.attachments.length} ${m.attachments.length === 1 ? "attachment" : "attachments"}` }) : null),
      h("div", { class: "row-sub" }, reads)));
}

export default { id: "inbox", title: "Inbox", mount, refresh };
