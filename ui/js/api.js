// The admin API: every call goes to a relative URL, so the same files work when the
// daemon serves them (http://127.0.0.1:PORT/ui/) and inside the tray app (amc://localhost/ui/).
//
// The admin token comes in the URL fragment (/ui/#token=amc_admin_…), moves to
// sessionStorage and leaves the address bar. Without one, no Authorization header is
// sent: the app's scheme handler adds it.

const TOKEN_KEY = "amc.adminToken";

/** An error the API answered with its envelope, or a network failure (status 0). */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

const unauthorizedListeners = [];

/** Called with the error when the API refuses the token. */
export function onUnauthorized(fn) {
  unauthorizedListeners.push(fn);
}

/**
 * Moves a token from the URL fragment to sessionStorage and strips it from the URL;
 * true if there was one.
 */
export function takeTokenFromUrl() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (!token) return false;
  sessionStorage.setItem(TOKEN_KEY, token);
  params.delete("token");
  const rest = params.toString();
  history.replaceState(null, "", `${location.pathname}${location.search}${rest ? `#${rest}` : ""}`);
  return true;
}

function headers(extra = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

async function request(method, path, body, { signal } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }), signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, "NETWORK", "AMC is not answering. Is it running?");
  }
  if (resp.ok) return resp;
  let envelope = null;
  try {
    envelope = (await resp.json()).error;
  } catch {
    // Not the envelope: say what we know.
  }
  const err = new ApiError(resp.status, envelope?.code ?? `HTTP_${resp.status}`,
    envelope?.message ?? `AMC answered ${resp.status} ${resp.statusText}`);
  if (resp.status === 401) for (const fn of unauthorizedListeners) fn(err);
  throw err;
}

/** GET a JSON route. */
export async function get(path, options) {
  return (await request("GET", path, undefined, options)).json();
}

/** POST JSON to a route (`{}` when no body is given). */
export async function post(path, body = {}, options) {
  return (await request("POST", path, body, options)).json();
}

/** GET a file, as a data: URL (the page's policy lets images load from data: only). */
export async function fileAsDataUrl(path) {
  const blob = await (await request("GET", path)).blob();
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

/** GET a file and hand it to the browser as a download. */
export async function download(path, filename, body) {
  const blob = await (await request(body === undefined ? "GET" : "POST", path, body)).blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** A query string from an object, skipping empty values. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** A key for a request that must not happen twice (relay posts and threads). */
export function idempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `ui-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
