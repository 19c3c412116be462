// Small DOM helpers: elements built from data (never from HTML strings, so no text an
// agent or a contact wrote can become markup), relative times, toasts and dialogs.

import { get } from "./api.js";

/**
 * Builds an element. `attrs` keys: `class`, `text`, `on<event>` (a listener),
 * `dataset` (an object), booleans (`hidden`, `disabled`…) and any attribute.
 * Children may be nodes, strings, or null/false (skipped); arrays are flattened.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

let uid = 0;
/** A fresh id for pairing labels and controls. */
export function nextId(prefix = "f") {
  uid += 1;
  return `${prefix}-${uid}`;
}

const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const full = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** "just now", "5 minutes ago", "yesterday"…, for an RFC 3339 time. */
export function relative(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const s = Math.round((t - now) / 1000);
  const abs = Math.abs(s);
  if (abs < 45) return "just now";
  if (abs < 3600) return rtf.format(Math.round(s / 60), "minute");
  if (abs < 86400) return rtf.format(Math.round(s / 3600), "hour");
  if (abs < 86400 * 30) return rtf.format(Math.round(s / 86400), "day");
  return full.format(t);
}

/** A `<time>` showing a relative time, with the full date on hover; kept fresh. */
export function time(iso) {
  if (!iso) return h("span", { class: "muted", text: "never" });
  return h("time", { datetime: iso, title: full.format(Date.parse(iso)), class: "rel", text: relative(iso) });
}

/** Updates every relative time on the page. */
export function refreshTimes() {
  for (const el of document.querySelectorAll("time.rel")) el.textContent = relative(el.getAttribute("datetime"));
}

/** A short message in the corner, read out by screen readers. */
export function toast(message, kind = "info") {
  const box = document.getElementById("toasts");
  const el = h("div", { class: `toast toast-${kind}`, role: kind === "error" ? "alert" : null, text: message });
  box.append(el);
  setTimeout(() => el.remove(), kind === "error" ? 8000 : 4000);
}

/**
 * Opens a modal dialog built by `build(close)`, which returns its content. Resolves with
 * what `close(value)` is called with, or null when dismissed (Escape, Cancel).
 * Focus goes to the first field (or `[autofocus]`) and back where it was afterwards.
 */
export function dialog(title, build, { wide = false } = {}) {
  return new Promise((resolve) => {
    const opener = document.activeElement;
    const headingId = nextId("dlg");
    const el = h("dialog", { class: wide ? "dialog wide" : "dialog", "aria-labelledby": headingId });
    let result = null;
    const close = (value = null) => {
      result = value;
      el.close();
    };
    el.append(h("h2", { id: headingId, text: title }), build(close));
    el.addEventListener("close", () => {
      el.remove();
      if (opener && opener.isConnected) opener.focus();
      resolve(result);
    });
    document.body.append(el);
    el.showModal();
    const first = el.querySelector("[autofocus]") || el.querySelector("input, select, textarea, button");
    if (first) first.focus();
  });
}

/**
 * A dialog's buttons: Cancel (closes with null) and `action`, a submit button of its form,
 * or with `onclick` a plain button. `kind` styles it (`primary`, `danger`).
 */
export function dialogActions(close, action, { kind = "primary", onclick = null, cancelFirst = false } = {}) {
  return h("div", { class: "dialog-actions" },
    h("button", { type: "button", class: "btn", onclick: () => close(null), autofocus: cancelFirst }, "Cancel"),
    h("button", { type: onclick ? "button" : "submit", class: `btn ${kind}`, onclick }, action));
}

/** A dialog's single button that closes it. */
export function doneButton(close) {
  return h("div", { class: "dialog-actions" }, h("button", { type: "button", class: "btn primary", onclick: () => close(true) }, "Done"));
}

/** Asks to confirm a destructive action; resolves true or false. */
export async function confirmAction(title, text, action) {
  const ok = await dialog(title, (close) =>
    h("div", {}, h("p", { text }), dialogActions(close, action, { kind: "danger", onclick: () => close(true), cancelFirst: true })));
  return ok === true;
}

/** GETs a JSON route; if that fails, shows why in `el` (as `what` could not be loaded) and returns null. */
export async function load(el, path, what) {
  try {
    return await get(path);
  } catch (e) {
    replace(el, empty(`Could not load ${what}`, e.message));
    return null;
  }
}

/** A text with a Copy button; `multiline` shows it as a code block. */
export function copyable(label, value, { multiline = false } = {}) {
  const id = nextId("copy");
  const field = multiline
    ? h("pre", { id, class: "code", tabindex: "0", "aria-label": label }, h("code", { text: value }))
    : h("input", { id, class: "code-input", type: "text", readonly: true, value, spellcheck: "false" });
  const button = h("button", {
    type: "button",
    class: "btn small",
    "aria-label": `Copy ${label}`,
    onclick: () => copy(value, field),
  }, "Copy");
  return h("div", { class: multiline ? "copyable block" : "copyable" },
    h("label", { for: multiline ? null : id, class: "copy-label" }, label),
    h("div", { class: "copy-row" }, field, button));
}

async function copy(value, field) {
  try {
    await navigator.clipboard.writeText(value);
    toast("Copied");
  } catch {
    // No clipboard permission: select the text so the person can copy it by hand.
    const range = document.createRange();
    range.selectNodeContents(field);
    if (field.select) field.select();
    else {
      getSelection().removeAllRanges();
      getSelection().addRange(range);
    }
    toast("Press ⌘C to copy the selected text");
  }
}

/** The empty state of a list. */
export function empty(title, text) {
  return h("div", { class: "empty" }, h("p", { class: "empty-title", text: title }), text ? h("p", { text }) : null);
}

/** Runs `fn`, disabling `button` meanwhile and showing any API error as a toast. */
export async function busy(button, fn) {
  if (button) button.disabled = true;
  try {
    return await fn();
  } catch (e) {
    if (e.name !== "AbortError") toast(e.message, "error");
    return undefined;
  } finally {
    if (button && button.isConnected) button.disabled = false;
  }
}

/** Labels for the enums of the API. */
export const SOURCE = { imessage: "iMessage", discord: "Discord" };
export const POLICY = { read_only: "Read only", review: "Review each send", auto: "Send automatically" };

/** A screen's header: its title (focused after navigation), a line about it, and tools. */
export function viewHeader(id, title, about, ...tools) {
  return h("header", { class: "view-head" },
    h("div", {}, h("h1", { id: `h-${id}`, tabindex: "-1", text: title }), about ? h("p", { class: "muted", text: about }) : null),
    tools.length ? h("div", { class: "toolbar" }, tools) : null);
}

/**
 * A `<select>` with its `<label>` (visually hidden with `hideLabel`), in a field wrapper;
 * `options` maps values to texts.
 */
export function select(label, options, value, onchange, { hideLabel = false, key = null } = {}) {
  const id = nextId("sel");
  return h("div", { class: "field inline" },
    h("label", { for: id, class: hideLabel ? "visually-hidden" : null, text: label }),
    h("select", { id, dataset: key ? { key } : null, onchange: (e) => onchange(e.target.value, e.target) },
      Object.entries(options).map(([v, text]) => h("option", { value: v, selected: v === value }, text))));
}
