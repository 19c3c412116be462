// Status: the daemon's health, each source's state with its fix, each permission AMC needs
// with where to grant it, the switch that pauses every agent's sends, and where AMC asks the
// person on their phone.

import { get, post } from "./api.js";
import { SOURCE, busy, h, load, replace, time, toast, viewHeader } from "./dom.js";

const STATE = { connected: "Connected", degraded: "Needs attention", disabled: "Off", "test-mode": "Test mode" };

// A source whose sends are only recorded (amc serve --test-sender) reaches no one: it shows
// as in test mode, never as connected.
const shownState = (s) => (s.test_mode && s.state === "connected" ? "test-mode" : s.state);

let body;
let refreshAll;

function mount(el, app) {
  refreshAll = app.refresh;
  body = h("div", { class: "status-body" });
  replace(el, viewHeader("status", "Status", "How AMC and its sources are doing."), body);
}

/** What the person said holds no code: how often, by the rule that had found something. */
function notACode(report) {
  const intro = report.marked
    ? (report.marked === 1
      ? "1 message you said holds no code: agents are given it whole."
      : `${report.marked} messages you said hold no code: agents are given them whole.`)
    : "When AMC hides something that is no code, choose Not a code on the message in the Inbox: agents are then given it whole, and it is counted here.";
  return h("section", { class: "panel", "aria-labelledby": "h-not-a-code" },
    h("h2", { id: "h-not-a-code", class: "section-title", text: "Not a code" }),
    h("p", { class: "muted", text: intro }),
    report.marked
      ? h("ul", { class: "rows not-a-code" }, report.by_rule.map((r) => h("li", { class: "row", dataset: { rule: r.rule } },
        h("span", { class: "name", text: r.why || r.rule }), h("span", { class: "muted", text: ` · ${r.messages}` }))))
      : null);
}

async function refresh() {
  const health = await load(body, "/healthz", "AMC's health");
  if (!health) return;
  const report = await get("/admin/codes/report").catch(() => null);
  const phoneSettings = await get("/admin/phone").catch(() => null);
  const paused = health.agents_paused;
  replace(body,
    h("section", { class: `panel pause ${paused ? "is-paused" : ""}`, "aria-labelledby": "h-pause" },
      h("div", {},
        h("h2", { id: "h-pause", class: "section-title", text: paused ? "Agents are paused" : "Agents are active" }),
        h("p", { class: "muted", text: paused
          ? "Every send waits in Review until you resume, whatever the channel's policy."
          : "Sends follow each channel's policy. Pausing holds every send for your review." })),
      h("button", {
        type: "button", class: paused ? "btn primary" : "btn danger", "aria-pressed": String(paused),
        dataset: { key: "pause-toggle" },
        onclick: (e) => busy(e.currentTarget, async () => {
          await post("/admin/pause", { paused: !paused });
          toast(paused ? "Agents resumed" : "All agents paused");
          refreshAll();
        }),
      }, paused ? "Resume agents" : "Pause all agents")),
    h("section", { class: "panel", "aria-labelledby": "h-sources" },
      h("h2", { id: "h-sources", class: "section-title", text: "Sources" }),
      h("ul", { class: "rows" }, Object.entries(health.sources).map(([source, s]) => h("li", { class: "row", dataset: { source } },
        h("span", { class: `dot ${shownState(s)}`, "aria-hidden": "true" }),
        h("div", { class: "row-main" },
          h("div", { class: "row-title" }, h("span", { class: "name", text: SOURCE[source] ?? source }),
            h("span", { class: `badge source-${shownState(s)}`, text: STATE[shownState(s)] ?? s.state })),
          s.reason ? h("p", { class: "reason", text: s.reason }) : null,
          catchingUp(s.catching_up)))))),
    permissions(health.sources),
    phoneSettings ? phone(phoneSettings) : null,
    macChecks(),
    report ? notACode(report) : null,
    h("section", { class: "panel", "aria-labelledby": "h-daemon" },
      h("h2", { id: "h-daemon", class: "section-title", text: "AMC" }),
      h("dl", { class: "facts" },
        h("dt", { text: "Health" }), h("dd", { text: health.status === "ok" ? "OK" : "Degraded" }),
        h("dt", { text: "Version" }), h("dd", { text: health.version }),
        h("dt", { text: "Running for" }), h("dd", { text: uptime(health.uptime_seconds) }))));
}

/** "Check this Mac": what only this Mac can tell (`amc doctor --deep`), in one table. */
function macChecks() {
  const results = h("div", { class: "mac-checks" });
  const WORD = { ok: "OK", FAILED: "Failed", skipped: "Skipped" };
  const STATE = { ok: "granted", FAILED: "needed", skipped: "off" };
  return h("section", { class: "panel", "aria-labelledby": "h-mac" },
    h("div", { class: "row-title" },
      h("h2", { id: "h-mac", class: "section-title", text: "This Mac" }),
      h("button", { type: "button", class: "btn", dataset: { key: "mac-check" }, onclick: (e) => busy(e.currentTarget, async () => {
        const { checks } = await post("/admin/doctor");
        replace(results, h("table", { class: "table log mac" },
          h("caption", { class: "visually-hidden", text: "What this Mac can tell" }),
          h("thead", {}, h("tr", {}, ["Check", "Result", "What AMC saw"].map((t) => h("th", { scope: "col", text: t })))),
          h("tbody", {}, checks.map((c) => h("tr", { dataset: { check: c.name, outcome: c.outcome } },
            h("th", { scope: "row", text: c.name }),
            h("td", {}, h("span", { class: `badge permission-${STATE[c.outcome] ?? "unknown"}`, text: WORD[c.outcome] ?? c.outcome })),
            h("td", { class: "text-cell" }, h("span", { text: c.detail }), c.fix ? h("span", { class: "note", text: `To fix: ${c.fix}` }) : null))))));
      }) }, "Check this Mac")),
    h("p", { class: "muted", text: "Reads chat.db without changing it, watches a scratch file beside it for file events, and looks at the Keychain item, AMC's signature and launch at login. It sends nothing: amc doctor --deep --send-test YOUR-ADDRESS also sends you one test message." }),
    results);
}

/** Approvals from the phone: where AMC asks, what about, and the conversations it could ask in. */
function phone(p) {
  const change = (button, body, said) => busy(button, async () => {
    await post("/admin/phone", body);
    toast(said);
    refreshAll();
  });
  const where = [p.imessage, p.discord].filter(Boolean);
  const place = (c) => (c.source === "discord" ? `your DM with the bot on Discord (${c.name})` : `your own conversation with ${c.address} in Messages`);
  const about = where.length
    ? `AMC asks you in ${where.map(place).join(" and in ")}. Answer with a thumbs-up or thumbs-down tapback (in Messages), the Approve and Reject buttons (on Discord), or reply "yes" or "no" with the question's code. Agents never see these conversations.`
    : "AMC can ask you about agents' held sends and tool requests in your own conversation with yourself in Messages, or in your DM with the bot on Discord; your answer there decides. Only such a conversation can be chosen, and agents never see it.";
  const others = p.candidates.filter((c) => !where.some((w) => w.channel_id === c.channel_id));
  const kind = (key, label, on) => h("label", { class: "check", dataset: { key: `phone-${key}` } },
    h("input", { type: "checkbox", checked: on, onchange: (e) => change(e.currentTarget, { [key]: e.currentTarget.checked },
      `${label}: ${e.currentTarget.checked ? "asked on your phone" : "answered here only"}`) }),
    ` ${label}`);
  return h("section", { class: "panel", "aria-labelledby": "h-phone", dataset: { phone: where.length ? "on" : "off" } },
    h("h2", { id: "h-phone", class: "section-title", text: "Approve from your phone" }),
    h("p", { class: "muted", text: about }),
    where.length
      ? h("div", { class: "phone-on" },
        h("div", { class: "row-title" }, kind("sends", "Held sends", p.sends), kind("tools", "Tool requests", p.tools)),
        h("p", { class: "muted", text: `An answer counts for ${p.expire_minutes} minutes; at most ${p.asks_a_minute} questions a minute.` }),
        h("div", { class: "actions" },
          h("button", { type: "button", class: "btn", dataset: { key: "phone-test" }, onclick: (e) => busy(e.currentTarget, async () => {
            await post("/admin/phone/test");
            toast(p.discord && !p.imessage ? "Sent: look in your DM with the bot on Discord" : "Sent: look in your own conversation");
          }) }, "Send a test"),
          h("button", { type: "button", class: "btn danger", dataset: { key: "phone-off" },
            onclick: (e) => change(e.currentTarget, { imessage: null, discord: null }, "AMC no longer asks on your phone") }, "Stop asking")))
      : null,
    others.length
      ? h("ul", { class: "rows" }, others.map((c) => h("li", { class: "row", dataset: { candidate: c.channel_id } },
        h("div", { class: "row-main" }, h("div", { class: "row-title" },
          h("span", { class: "name", text: c.name }), h("span", { class: "muted", text: `${SOURCE[c.source] ?? c.source} · ${c.address}` }))),
        h("button", { type: "button", class: "btn primary", onclick: (e) => change(e.currentTarget, { [c.source]: c.channel_id }, "AMC will ask on your phone") },
          "Ask me here"))))
      : where.length ? null : h("p", { class: "muted", dataset: { key: "phone-none" },
        text: "No conversation of yours with yourself is known yet: send yourself a message in Messages (or your bot a DM on Discord), then come back here." }));
}

// What macOS and Discord must allow, whether they do (as far as the sources can tell), and
// where to change it.
const PERMISSIONS = [
  {
    id: "full-disk-access", source: "imessage", name: "Full Disk Access",
    what: "Lets AMC read your Messages history (chat.db).",
    missing: /Full Disk Access|cannot open|unable to open|permission/i,
    fix: "System Settings → Privacy & Security → Full Disk Access: turn on AMC (or the terminal running amc serve), then restart AMC.",
  },
  {
    id: "automation-messages", source: "imessage", name: "Automation: Messages",
    what: "Lets AMC send the iMessages agents write, through Messages. macOS asks the first time one is sent.",
    missing: /Automation|-1743/,
    sends: true,
    fix: "System Settings → Privacy & Security → Automation → AMC: turn on Messages.",
    untilUsed: true,
  },
  {
    id: "discord-bot", source: "discord", name: "Discord bot",
    what: "Lets AMC read and answer in the servers and DMs your bot is in.",
    missing: /token|Message Content|permission|refused/i,
    sends: true,
    fix: "Discord Developer Portal → your application → Bot: turn on Message Content Intent, and check the token AMC uses (see docs/discord.md).",
  },
];

function permissions(sources) {
  return h("section", { class: "panel", "aria-labelledby": "h-permissions" },
    h("h2", { id: "h-permissions", class: "section-title", text: "Permissions" }),
    h("ul", { class: "rows" }, PERMISSIONS.map((p) => {
      const s = sources[p.source] ?? { state: "disabled" };
      const [state, label] = permissionState(p, s);
      return h("li", { class: "row", dataset: { permission: p.id, state } },
        h("span", { class: `dot ${state === "granted" ? "connected" : state === "needed" ? "degraded" : "disabled"}`, "aria-hidden": "true" }),
        h("div", { class: "row-main" },
          h("div", { class: "row-title" }, h("span", { class: "name", text: p.name }),
            h("span", { class: `badge permission-${state}`, text: label })),
          h("p", { class: "muted", text: p.what }),
          state === "granted" || state === "off" ? null
            : h("p", { class: "reason", text: `${state === "needed" ? "To fix" : "If it was refused"}: ${p.fix}` })));
    })));
}

function permissionState(p, s) {
  if (s.state === "disabled") return ["off", `${SOURCE[p.source] ?? p.source} is off`];
  if (s.state === "degraded" && p.missing.test(s.reason ?? "")) return ["needed", "Needed"];
  // With --test-sender nothing is sent: a permission to send is neither granted nor needed.
  if (p.sends && s.test_mode) return ["off", "Test mode: sends are only recorded"];
  // A stand-in source is connected without reading anything: access is granted only once
  // the source read (chat.db, for iMessage).
  if (s.test_mode && !s.caught_up_at) return ["off", "Test mode: nothing read"];
  if (p.untilUsed) return ["unknown", "Asked on first send"];
  return s.state === "connected" ? ["granted", "Granted"] : ["unknown", "Unknown"];
}

// The channels whose catch-up is not done yet: a history request failed, and AMC tries
// each again on its own until it reads to its end.
function catchingUp(list) {
  if (!list?.length) return null;
  return h("ul", { class: "catching-up" }, list.map((c) => h("li", { dataset: { channel: c.channel_id } },
    h("span", { text: `Still catching up on ${c.channel} (try ${c.attempts}: ${c.reason}); ` +
      (c.next_try_at ? "next try " : "not tried again before the next connection") }),
    c.next_try_at ? time(c.next_try_at) : null)));
}

function uptime(s) {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export default { id: "status", title: "Status", mount, refresh };
