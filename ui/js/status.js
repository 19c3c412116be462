// Status: the daemon's health, each source's state with its fix, and the switch that
// pauses every agent's sends.

import { post } from "./api.js";
import { SOURCE, busy, h, load, replace, toast, viewHeader } from "./dom.js";

const STATE = { connected: "Connected", degraded: "Needs attention", disabled: "Off" };

let body;
let refreshAll;

function mount(el, app) {
  refreshAll = app.refresh;
  body = h("div", { class: "status-body" });
  replace(el, viewHeader("status", "Status", "How AMC and its sources are doing."), body);
}

async function refresh() {
  const health = await load(body, "/healthz", "AMC's health");
  if (!health) return;
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
        h("span", { class: `dot ${s.state}`, "aria-hidden": "true" }),
        h("div", { class: "row-main" },
          h("div", { class: "row-title" }, h("span", { class: "name", text: SOURCE[source] ?? source }),
            h("span", { class: `badge source-${s.state}`, text: STATE[s.state] ?? s.state })),
          s.reason ? h("p", { class: "reason", text: s.reason }) : null))))),
    h("section", { class: "panel", "aria-labelledby": "h-daemon" },
      h("h2", { id: "h-daemon", class: "section-title", text: "AMC" }),
      h("dl", { class: "facts" },
        h("dt", { text: "Health" }), h("dd", { text: health.status === "ok" ? "OK" : "Degraded" }),
        h("dt", { text: "Version" }), h("dd", { text: health.version }),
        h("dt", { text: "Running for" }), h("dd", { text: uptime(health.uptime_seconds) }))));
}

function uptime(s) {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export default { id: "status", title: "Status", mount, refresh };
