// Small DOM helpers: elements built from data (never from HTML strings, so no text an
// agent or a contact wrote can become markup, and every text shown with its hidden
// characters marked), relative times, toasts and dialogs.

import { get } from "./api.js";

// Characters a browser draws as nothing, or that reorder the text around them: controls
// (but the tab and the newline, which lay the text out), the line and paragraph
// separators, the interlinear annotation marks, Unicode's default-ignorable code points
// (bidi controls, zero-width characters, the soft hyphen, Hangul fillers, variation
// selectors, tags), the other format characters and the blank Braille pattern. The set
// `amc` shows in a terminal (crates/amc-core/src/text.rs), but for those two.
const HIDDEN = /[\0-\x08\x0B-\x1F\x7F-\x9F\xAD\u034F\u0600-\u0605\u061C\u06DD\u070F\u0890\u0891\u08E2\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u2028-\u202E\u2060-\u206F\u2800\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF0-\uFFFB\u{110BD}\u{110CD}\u{13430}-\u{1343F}\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0000}-\u{E0FFF}]/u;
// Emoji and the symbols of emoji sequences: a zero-width joiner between two is seen (it
// joins them into one picture), so it stays.
const PICTOGRAPH = /[\u2300-\u23FF\u2600-\u27BF\u2B00-\u2BFF\u{1F000}-\u{1FAFF}]/u;
const SELECTOR = /[\uFE0E\uFE0F]/u;
const NAMES = {
  "\0": "null", "\b": "backspace", "\r": "carriage return", "\x1B": "escape", "\x7F": "delete",
  "\xAD": "soft hyphen", "\u061C": "Arabic letter mark",
  "\u200B": "zero-width space", "\u200C": "zero-width non-joiner", "\u200D": "zero-width joiner",
  "\u200E": "left-to-right mark", "\u200F": "right-to-left mark",
  "\u2028": "line separator", "\u2029": "paragraph separator",
  "\u202A": "left-to-right embedding", "\u202B": "right-to-left embedding", "\u202C": "pop directional formatting",
  "\u202D": "left-to-right override", "\u202E": "right-to-left override",
  "\u2060": "word joiner", "\u2066": "left-to-right isolate", "\u2067": "right-to-left isolate",
  "\u2068": "first strong isolate", "\u2069": "pop directional isolate", "\uFEFF": "zero-width no-break space",
};

/**
 * `text` to show: the text as it is, but each character of HIDDEN as a mark
 * `⟨U+202E⟩` naming it, so the person sees every part of a text and in its order (a bidi
 * override, once a mark, reorders nothing). Kept where they only change how the character
 * before looks: one presentation selector after a character shown (❤️), a joiner between two
 * pictographs (👩‍💻). `marks: false` gives a plain string, for an attribute.
 */
function shown(text, { marks = true } = {}) {
  text = String(text);
  if (!HIDDEN.test(text)) return marks ? [text] : text;
  const parts = [];
  let run = "";
  let before = null; // the last character kept, if nothing was marked since
  let selectorFits = false; // one selector, straight after a character kept (a run hides bits)
  const chars = Array.from(text);
  chars.forEach((c, i) => {
    const selector = SELECTOR.test(c);
    const kept = selector ? selectorFits
      : c === "\u200D" ? before !== null && PICTOGRAPH.test(before) && PICTOGRAPH.test(chars[i + 1] ?? "")
      : !HIDDEN.test(c);
    selectorFits = kept && !selector && !/\s/u.test(c); // after a space it would only carry bits
    if (kept) {
      run += c;
      if (!selector) before = c;
      return;
    }
    const code = `U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
    if (run) parts.push(run);
    run = "";
    before = null;
    if (!marks) {
      parts.push(`⟨${code}⟩`);
      return;
    }
    const mark = document.createElement("span");
    mark.className = "hidden-char";
    mark.title = `${code}, ${NAMES[c] ?? (c <= "\x9F" ? "a control character" : "an invisible character")}: the text holds it here, unseen`;
    mark.textContent = `⟨${code}⟩`;
    parts.push(mark);
  });
  if (run) parts.push(run);
  return marks ? parts : parts.join("");
}

/**
 * Builds an element. `attrs` keys: `class`, `text`, `on<event>` (a listener),
 * `dataset` (an object), booleans (`hidden`, `disabled`…) and any attribute.
 * Children may be nodes, strings, or null/false (skipped); arrays are flattened.
 * Texts (`text`, string children, `title`) are shown with their hidden characters marked.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.replaceChildren(...shown(value));
    else if (key === "title") el.title = shown(value, { marks: false });
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
    else if (child instanceof Node) el.append(child);
    else el.append(...shown(child));
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
const SECRET = { one_time_code: "One-time code", sign_in_link: "Sign-in link" };

/** The mark of a message that holds a one-time code or sign-in link (the person sees the
 *  whole text; agents are given it hidden unless the person shows the channel's codes). */
export function secretTag(m) {
  if (!m.secrets?.length || m.not_a_code) return null;
  const why = [...new Set((m.secret_spans ?? []).map((s) => s.why))];
  return h("span", {
    class: "tag warn secret",
    title: "Agents are given this message with it hidden, unless you show this channel's codes to them (Channels › Codes…)."
      + (why.length ? ` Found: ${why.join("; ")}.` : ""),
    text: m.secrets.map((k) => SECRET[k] ?? k).join(" · "),
  });
}

/** A message's text with each secret of it marked (`secret_spans`, whose offsets count
 *  characters): the person sees it whole, and, on hover, why agents are not given it. */
export function withSecrets(m) {
  const spans = m.not_a_code ? [] : (m.secret_spans ?? []);
  if (!spans.length) return m.text;
  const chars = Array.from(m.text);
  const out = [];
  let at = 0;
  for (const s of spans) {
    if (s.start < at || s.end > chars.length) continue;
    out.push(chars.slice(at, s.start).join(""));
    out.push(h("mark", {
      class: "secret",
      title: `${SECRET[s.kind] ?? s.kind}, hidden from agents: ${s.why}`,
      dataset: { rule: s.rule },
      text: chars.slice(s.start, s.end).join(""),
    }));
    at = s.end;
  }
  out.push(chars.slice(at).join(""));
  return out;
}
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
