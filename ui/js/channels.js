// Channels: what AMC has seen, per source; approve (from now, with history), block, and
// each allowed channel's send policy, agents, and whether agents are given its one-time codes.

import { get, post, query } from "./api.js";
import { POLICY, SOURCE, busy, confirmAction, dialog, dialogActions, empty, h, load, nextId, replace, select, time, toast, viewHeader } from "./dom.js";

const STATES = { pending: "Pending", allowed: "Allowed", blocked: "Blocked" };
const ABOUT = {
  pending: "New conversations wait here, unseen by agents, until you approve or block them.",
  allowed: "Agents can read these and send as each one's policy says.",
  blocked: "Hidden from agents. Approving one again shows it to them.",
};

let root;
let list;
let state = "pending";
let search = "";
let refreshAll;

function mount(el, app) {
  root = el;
  refreshAll = app.refresh;
  const searchId = nextId("search");
  let timer = null;
  const tabs = h("div", { class: "segmented", role: "radiogroup", "aria-label": "Channel state" },
    Object.entries(STATES).map(([value, text]) => {
      const id = nextId("state");
      return [
        h("input", {
          type: "radio", name: "channel-state", id, value, checked: value === state,
          onchange: () => { state = value; refresh(); },
        }),
        h("label", { for: id }, text, value === "pending" ? h("span", { class: "seg-count", id: "seg-pending" }) : null),
      ];
    }));
  const searchBox = h("div", { class: "field inline search" },
    h("label", { for: searchId, class: "visually-hidden", text: "Search channels" }),
    h("input", {
      id: searchId, type: "search", placeholder: "Search names and ids", autocomplete: "off",
      oninput: (e) => {
        clearTimeout(timer);
        timer = setTimeout(() => { search = e.target.value.trim(); refresh(); }, 200);
      },
    }));
  list = h("div", { class: "list-area", "aria-live": "polite", "aria-busy": "false" });
  replace(root, viewHeader("channels", "Channels", null, tabs, searchBox), h("p", { class: "muted about", id: "channels-about" }), list);
}

async function refresh() {
  document.getElementById("channels-about").textContent = ABOUT[state];
  const data = await load(list, `/admin/channels${query({ state, q: search })}`, "channels");
  if (!data) return;
  const pendingCount = document.getElementById("seg-pending");
  if (state === "pending") pendingCount.textContent = data.channels.length ? ` ${data.channels.length}` : "";
  if (data.channels.length === 0) {
    replace(list, search
      ? empty(`No ${state} channels match “${search}”`, "Try another name or id.")
      : empty(`No ${state} channels`, state === "pending" ? "New conversations appear here when AMC sees them." : null));
    return;
  }
  const bySource = Object.keys(SOURCE).map((source) => [source, data.channels.filter((c) => c.source === source)]);
  replace(list, bySource.filter(([, cs]) => cs.length).map(([source, cs]) => {
    const headingId = nextId("src");
    return h("section", { class: "group", "aria-labelledby": headingId },
      h("h2", { id: headingId, class: "group-title" }, SOURCE[source], h("span", { class: "muted", text: ` ${cs.length}` })),
      h("ul", { class: "rows" }, cs.map(row)));
  }));
}

function row(c) {
  const nameId = `name-${c.id}`;
  const counts = c.state === "allowed"
    ? `${c.visible_count} of ${c.message_count} messages visible to agents`
    : `${c.message_count} ${c.message_count === 1 ? "message" : "messages"}`;
  const actions = [];
  if (c.state === "allowed") {
    actions.push(h("button", {
      type: "button", class: "btn", "aria-describedby": nameId, dataset: { key: `agents-${c.id}` },
      onclick: (e) => chooseAgents(c, e.currentTarget),
    }, "Agents…"));
    actions.push(h("button", {
      type: "button", class: "btn", "aria-describedby": nameId, dataset: { key: `codes-${c.id}` },
      onclick: (e) => chooseCodes(c, e.currentTarget),
    }, "Codes…"));
    actions.push(h("button", {
      type: "button", class: "btn", "aria-describedby": nameId, dataset: { key: `readers-${c.id}` },
      onclick: (e) => toggleReaders(c, e.currentTarget),
    }, c.receives_anything ? "Hold crossings again" : "Receives anything…"));
    actions.push(select(`Send policy for ${c.name}`, POLICY, c.send_policy,
      (value, el) => busy(el, async () => {
        await post(`/admin/channels/${c.id}/policy`, { send_policy: value });
        toast(`${c.name}: ${POLICY[value].toLowerCase()}`);
        refreshAll();
      }), { hideLabel: true, key: `policy-${c.id}` }));
  } else {
    actions.push(h("button", {
      type: "button", class: "btn primary", "aria-describedby": nameId, dataset: { key: `approve-${c.id}` },
      onclick: (e) => approve(c, e.currentTarget),
    }, "Approve…"));
  }
  if (c.state !== "blocked") {
    actions.push(h("button", {
      type: "button", class: "btn", "aria-describedby": nameId, dataset: { key: `block-${c.id}` },
      onclick: (e) => busy(e.currentTarget, async () => {
        await post(`/admin/channels/${c.id}/block`);
        toast(`Blocked ${c.name}`);
        refreshAll();
      }),
    }, "Block"));
  }
  return h("li", { class: "row", dataset: { channel: c.id } },
    h("div", { class: `avatar ${c.source}`, "aria-hidden": "true", text: initials(c.name) }),
    h("div", { class: "row-main" },
      h("div", { class: "row-title" }, h("span", { id: nameId, class: "name", text: c.name }),
        h("span", { class: "tag", text: c.kind === "group" ? "Group" : "Direct" }),
        c.sensitive ? h("span", { class: "tag warn", title: SENSITIVE, text: senderKind(c) }) : null,
        c.gone ? h("span", { class: "tag warn", title: c.gone, text: "Gone" }) : null),
      c.gone ? h("div", { class: "row-sub warn-text", text: `${c.gone}. Its messages stay; agents cannot send here.` }) : null,
      h("div", { class: "row-sub muted", title: c.platform_id }, counts, " · last message ", time(c.last_message_at),
        address(c) ? h("span", { class: "mono", text: ` · ${address(c)}` }) : null),
      c.state === "allowed" ? h("div", { class: "row-sub muted seen-by", text: seenBy(c) }) : null,
      codesLine(c) ? h("div", { class: "row-sub muted codes", text: codesLine(c) }) : null,
      c.state === "allowed" && c.receives_anything
        ? h("div", { class: "row-sub warn-text readers", text: "Receives anything: agents' sends here are not held for what they read elsewhere." })
        : null),
    h("div", { class: "row-actions" }, actions));
}

/** The readers rule for one channel: off only after the person says so twice. */
async function toggleReaders(c, button) {
  const anything = !c.receives_anything;
  if (anything) {
    const sure = await confirmAction(`Let ${c.name} receive anything?`, "Under \"auto\", an agent's send here waits for you when it could carry what the agent read in another conversation to people who could not read it. Turned off, an agent could send here, without asking, whatever it read anywhere: for example what someone wrote in a message asking it to do so.", "Receive anything");
    if (!sure) return;
  }
  await busy(button, async () => {
    await post(`/admin/channels/${c.id}/readers`, { receives_anything: anything, confirmed: anything });
    toast(anything ? `${c.name} receives anything` : `${c.name}: sends that cross conversations wait for you`);
    refreshAll();
  });
}

/** The person's phone number or email for an iMessage conversation with one person, when
 *  its name is not already that; never a raw chat or Discord id, which mean nothing to a
 *  person (it stays in the row's tooltip). */
function address(c) {
  if (c.source !== "imessage" || c.kind !== "dm") return null;
  const handle = c.platform_id.split(";").pop();
  return handle && handle !== c.name && /^(\+?\d[\d\s-]*|[^@\s]+@[^@\s]+)$/.test(handle) ? handle : null;
}

function initials(name) {
  const words = name.replace(/[^\p{L}\p{N} ]/gu, "").trim().split(/\s+/).filter(Boolean);
  return (words.length > 1 ? words[0][0] + words[1][0] : (words[0] ?? "#").slice(0, 2)).toUpperCase();
}

/** Why a conversation with a short-code sender is approved only when confirmed. */
const SENSITIVE = "A short code or a business's sender name: banks and sign-in services send one-time codes from these.";

/** What kind of business sender a sensitive conversation is with: a number or a name. */
function senderKind(c) {
  return /^\d+$/.test(c.platform_id.split(";").pop()) ? "Short code" : "Sender ID";
}

/** Whether agents are given a channel's one-time codes and sign-in links, in words; null
 *  when it holds none and none would be shown. */
export function codesLine(c) {
  const n = c.secret_count;
  const held = `${n} ${n === 1 ? "message holds" : "messages hold"} a one-time code or sign-in link`;
  if (c.codes === "shown") return `${n ? held : "One-time codes"}: shown to every agent that reads it`;
  if (c.codes === "some") return `${n ? held : "One-time codes"}: shown to ${c.codes_agents.join(", ")} only`;
  return n ? `${held}: hidden from agents` : null;
}

/** Who sees an allowed channel, in words. */
export function seenBy(c) {
  if (!c.agents) return "Seen by every agent";
  if (c.agents.length === 0) return "Seen by no agent";
  return `Seen by ${c.agents.map((a) => a.send_policy ? `${a.id} (${POLICY[a.send_policy].toLowerCase()})` : a.id).join(", ")}`;
}

/** The agents that can be given a channel: every agent not revoked. */
async function liveAgents() {
  return (await get("/admin/agents")).agents.filter((a) => !a.revoked_at).map((a) => a.id);
}

/**
 * Every agent, or some: a fieldset and its value (`null` for every agent, else the ids).
 * A new agent sees only channels open to every agent.
 */
function agentPicker(agents, chosen) {
  let every = chosen === null;
  const picked = new Set(chosen ?? []);
  const boxes = agents.map((id) => {
    const boxId = nextId("agent");
    return h("div", { class: "choice" },
      h("input", {
        type: "checkbox", id: boxId, value: id, checked: picked.has(id), disabled: every,
        onchange: (e) => { if (e.target.checked) picked.add(id); else picked.delete(id); },
      }),
      h("label", { for: boxId, class: "mono", text: id }));
  });
  const radio = (value, text) => {
    const id = nextId("aud");
    return h("div", { class: "choice" },
      h("input", {
        type: "radio", name: "audience", id, value, checked: (value === "all") === every,
        onchange: () => { every = value === "all"; for (const b of boxes) b.querySelector("input").disabled = every; },
      }),
      h("label", { for: id }, h("strong", { text })));
  };
  const el = h("fieldset", { class: "agent-picker" },
    h("legend", { text: "Which agents may read it" }),
    radio("all", "Every agent, and agents added later"),
    radio("some", "Only these agents:"),
    agents.length ? h("div", { class: "agent-boxes" }, boxes) : h("p", { class: "muted", text: "No agents yet." }));
  return { el, value: () => (every ? null : [...picked].sort()) };
}

/** Changes who sees an allowed channel. */
async function chooseAgents(c, button) {
  const agents = await liveAgents();
  const choice = await dialog(`Who sees ${c.name}`, (close) => {
    const picker = agentPicker(agents, c.agents ? c.agents.map((a) => a.id) : null);
    return h("form", {
      class: "form",
      onsubmit: (e) => { e.preventDefault(); close({ agents: picker.value() }); },
    }, picker.el, dialogActions(close, "Save"));
  });
  if (!choice) return;
  await busy(button, async () => {
    await post(`/admin/channels/${c.id}/agents`, choice.agents === null ? { all: true } : { agents: choice.agents });
    toast(choice.agents === null ? `${c.name}: every agent` : `${c.name}: ${choice.agents.length} ${choice.agents.length === 1 ? "agent" : "agents"}`);
    refreshAll();
  });
}

/** Which agents are given the channel's one-time codes and sign-in links. */
async function chooseCodes(c, button) {
  // Only agents that read the channel can be given its codes.
  const live = await liveAgents();
  const agents = c.agents ? live.filter((id) => c.agents.some((a) => a.id === id)) : live;
  const choice = await dialog(`One-time codes in ${c.name}`, (close) => {
    let codes = c.codes;
    const picked = new Set(c.codes_agents.filter((id) => agents.includes(id)));
    const boxes = agents.map((id) => {
      const boxId = nextId("code-agent");
      return h("div", { class: "choice" },
        h("input", {
          type: "checkbox", id: boxId, value: id, checked: picked.has(id), disabled: codes !== "some",
          onchange: (e) => { if (e.target.checked) picked.add(id); else picked.delete(id); },
        }),
        h("label", { for: boxId, class: "mono", text: id }));
    });
    const radio = (value, text, hint) => {
      const id = nextId("codes");
      return h("div", { class: "choice" },
        h("input", {
          type: "radio", name: "codes", id, value, checked: value === codes, autofocus: value === codes,
          onchange: () => { codes = value; for (const b of boxes) b.querySelector("input").disabled = value !== "some"; },
        }),
        h("label", { for: id }, h("strong", { text }), hint ? h("span", { class: "muted", text: hint }) : null));
    };
    const error = h("p", { class: "warn-text", role: "alert" });
    return h("form", {
      class: "form",
      onsubmit: (e) => {
        e.preventDefault();
        if (codes === "some" && picked.size === 0) { error.textContent = "Choose at least one agent."; return; }
        close(codes === "some" ? { codes, agents: [...picked].sort() } : { codes });
      },
    },
    h("p", { class: "muted", text: "Codes and sign-in links let whoever has them into accounts. Agents get the message with them replaced by a marker unless you show them here." }),
    h("fieldset", {},
      h("legend", { text: "Which agents are given them" }),
      radio("hidden", "No agent", " Recommended."),
      radio("shown", "Every agent that reads this channel"),
      radio("some", "Only these agents:"),
      agents.length ? h("div", { class: "agent-boxes" }, boxes) : h("p", { class: "muted", text: "No agents yet." })),
    error,
    dialogActions(close, "Save"));
  });
  if (!choice) return;
  await busy(button, async () => {
    await post(`/admin/channels/${c.id}/codes`, choice);
    toast(choice.codes === "hidden" ? `${c.name}: codes hidden from agents` : `${c.name}: codes shown`);
    refreshAll();
  });
}

/** The approval dialog: how much history agents get, which agents, and the send policy. A
 *  conversation with a short-code sender asks a second time. */
async function approve(c, button) {
  const agents = await liveAgents();
  const choice = await dialog(`Approve ${c.name}`, (close) => {
    const picker = agentPicker(agents, c.agents ? c.agents.map((a) => a.id) : null);
    const daysId = nextId("days");
    let history = "from_now";
    const days = h("input", { id: daysId, type: "number", min: "1", max: "36500", value: "7", disabled: true, required: true });
    const radio = (value, text, hint) => {
      const id = nextId("hist");
      return h("div", { class: "choice" },
        h("input", {
          type: "radio", name: "history", id, value, checked: value === history,
          onchange: () => { history = value; days.disabled = value !== "days"; },
        }),
        h("label", { for: id }, h("strong", { text }), h("span", { class: "muted", text: hint })));
    };
    let policy = c.state === "pending" ? "review" : c.send_policy;
    const form = h("form", {
      class: "form",
      onsubmit: (e) => {
        e.preventDefault();
        const body = { history, send_policy: policy };
        const chosen = picker.value();
        if (chosen !== null) body.agents = chosen;
        if (history === "days") {
          if (!days.checkValidity()) { days.reportValidity(); return; }
          body.days = Number(days.value);
        }
        close(body);
      },
    },
    h("fieldset", {},
      h("legend", { text: "What agents may read" }),
      radio("from_now", "From now on", "Only messages that arrive after approval."),
      radio("all", "All history", `Every stored message (${c.message_count}).`),
      h("div", { class: "choice-days" },
        radio("days", "Recent history", "Messages of the last days:"),
        h("label", { for: daysId, class: "visually-hidden", text: "Number of days" }), days, h("span", { class: "muted", text: " days" }))),
    picker.el,
    select("When an agent sends here", POLICY, policy, (v) => { policy = v; }),
    dialogActions(close, "Approve"));
    return form;
  });
  if (!choice) return;
  if (c.sensitive) {
    const sure = await confirmAction(`${c.name} is a ${senderKind(c).toLowerCase()}`, `${SENSITIVE} Agents are not given the codes unless you show them with Codes…, but they will read everything else this sender sends. Approve it anyway?`, "Approve anyway");
    if (!sure) return;
    choice.sensitive = true;
  }
  await busy(button, async () => {
    // Back to every agent for a channel that was restricted before.
    if (!choice.agents && c.agents) await post(`/admin/channels/${c.id}/agents`, { all: true });
    await post(`/admin/channels/${c.id}/approve`, choice);
    toast(`Approved ${c.name}`);
    refreshAll();
  });
}

export default { id: "channels", title: "Channels", mount, refresh };
