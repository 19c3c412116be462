// The page: navigation between screens, the counts in the sidebar, and live updates
// from the daemon's change feed (a long-poll, which also works inside the tray app,
// where responses cannot stream).

import { get, onUnauthorized, takeTokenFromUrl } from "./api.js";
import { h, refreshTimes, replace } from "./dom.js";
import channels from "./channels.js";
import review from "./review.js";
import inbox from "./inbox.js";
import threads from "./threads.js";
import agents from "./agents.js";
import status from "./status.js";
import setup, { nothingSetUp } from "./setup.js";

const VIEWS = [channels, review, inbox, threads, agents, status, setup];
const POLL_MS = 25000;

let current = null;
let locked = false;

function viewFromHash() {
  const name = location.hash.slice(1);
  return VIEWS.find((v) => v.id === name) ?? channels;
}

async function show(view) {
  current = view;
  for (const v of VIEWS) {
    document.getElementById(`view-${v.id}`).hidden = v !== view;
    const link = document.getElementById(`nav-${v.id}`);
    if (v === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${view.title} · AMC`;
  await view.refresh();
}

/** Reloads what is on screen, keeping the focus on the same control if it still exists. */
async function refresh() {
  if (locked) return;
  const key = document.activeElement?.dataset?.key;
  await Promise.all([current?.refresh(), counts()]);
  if (key && !document.querySelector("dialog[open]")) {
    const again = document.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (again && again !== document.activeElement) again.focus();
  }
}

let pending = null;
/** Coalesces bursts of events into one reload. */
function refreshSoon() {
  if (pending) return;
  pending = setTimeout(() => {
    pending = null;
    refresh();
  }, 120);
}

const lastCounts = {};
function badge(id, n, label) {
  const el = document.getElementById(id);
  el.textContent = n > 0 ? String(n) : "";
  el.hidden = n === 0;
  el.setAttribute("aria-label", label);
  if (lastCounts[id] !== undefined && lastCounts[id] !== n && n > lastCounts[id]) {
    document.getElementById("announcer").textContent = label;
  }
  lastCounts[id] = n;
}

async function counts() {
  try {
    const [pendingChannels, held, tools, health] = await Promise.all([
      get("/admin/channels?state=pending"),
      get("/admin/sends?status=held&limit=500"),
      get("/admin/tool-requests?status=pending&limit=500"),
      get("/healthz"),
    ]);
    const p = pendingChannels.channels.length;
    const r = held.sends.length + tools.tool_requests.length;
    badge("count-pending", p, `${p} pending ${p === 1 ? "channel" : "channels"}`);
    badge("count-held", r, `${r} ${r === 1 ? "request" : "requests"} waiting for your review`);
    document.getElementById("paused-pill").hidden = !health.agents_paused;
    showIndexing(health.search_index, health.secrets_scan);
  } catch {
    // The banner and the screen say what is wrong.
  }
}

let indexingTimer = null;

/** While older messages are being indexed for search, or looked through for one-time
 *  codes, says how far, and looks again soon. */
function showIndexing(search, secrets) {
  const pill = document.getElementById("indexing-pill");
  const progress = search ?? secrets;
  pill.hidden = !progress;
  clearTimeout(indexingTimer);
  if (!progress) return;
  const percent = Math.floor((progress.done * 100) / Math.max(progress.total, 1));
  const counted = `${progress.done.toLocaleString()} of ${progress.total.toLocaleString()} older messages`;
  if (search) {
    pill.textContent = `Indexing for search: ${percent}%`;
    pill.title = `${counted} indexed; search finds the newest first.`;
  } else {
    pill.textContent = `Checking for codes: ${percent}%`;
    pill.title = `${counted} looked through for one-time codes, for the counts on Channels. Agents are not given codes meanwhile either.`;
  }
  indexingTimer = setTimeout(counts, 2000);
}

function setOnline(online) {
  document.getElementById("offline").hidden = online;
}

/** Follows the change feed for as long as the page is open. */
async function follow() {
  let next = null;
  let delay = 1000;
  for (;;) {
    try {
      if (next === null) next = (await get("/admin/events/poll")).next;
      const r = await get(`/admin/events/poll?after=${next}&timeout_ms=${POLL_MS}`);
      if (!document.getElementById("offline").hidden) {
        setOnline(true);
        refreshSoon();
      }
      delay = 1000;
      next = r.next;
      if (r.missed || r.events.length > 0) refreshSoon();
    } catch (e) {
      if (e.status === 401) return;
      setOnline(false);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }
}

function lock(err) {
  if (locked) return;
  locked = true;
  document.body.classList.add("locked");
  replace(document.getElementById("main"),
    h("section", { class: "locked-panel", "aria-labelledby": "locked-title" },
      h("h1", { id: "locked-title", text: "AMC needs its admin token" }),
      h("p", { text: `AMC refused this page (${err.message}).` }),
      h("p", {}, "Open the interface from the AMC menu bar app, or from a terminal where AMC serves on a loopback port:"),
      h("pre", { class: "code" }, h("code", { text: "amc serve --listen 127.0.0.1:7878 &\namc ui --open" })),
      h("p", { class: "muted" }, "`amc ui` prints a link that carries the token; this page keeps it only for this tab.")));
  document.getElementById("main").focus();
}

function start() {
  takeTokenFromUrl();
  onUnauthorized(lock);
  for (const v of VIEWS) v.mount(document.getElementById(`view-${v.id}`), { refresh: refreshSoon });
  window.addEventListener("hashchange", () => {
    // A new link from `amc ui` opened in this tab: start again with its token.
    if (takeTokenFromUrl() && locked) {
      location.reload();
      return;
    }
    const view = viewFromHash();
    if (view !== current) show(view).then(() => document.getElementById(`h-${view.id}`)?.focus());
  });
  // With nothing set up yet (no conversation approved, no agent), the window opens on Setup.
  (location.hash ? Promise.resolve(false) : nothingSetUp()).then((fresh) => show(fresh ? setup : viewFromHash()));
  counts();
  follow();
  setInterval(refreshTimes, 30000);
}

start();
