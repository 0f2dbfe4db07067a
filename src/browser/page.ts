// What the browser tools do in a page, through a DevTools session of its active tab. The page
// is hostile: what it answers is taken only for its shape, cut to a bound, and every step
// has a deadline, so a page that never loads, loops or dies is an answer, never a hang.
import type { CdpSession } from "./cdp.js";

/** A step the page did not let happen (no such element, no load, a crash): told as it is. */
export class PageFailure extends Error {}

/** Runs `work` on the page, failing with `what` once `ms` passed or the session is gone. */
export async function within<T>(
  ms: number,
  what: string,
  page: CdpSession,
  work: () => Promise<T>,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new PageFailure(`${what} took longer than ${ms / 1000} s`)), ms);
      }),
      page.closed.then(() => {
        throw new PageFailure("the page's tab went away (its renderer or the browser ended)");
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Evaluates a function of the page with JSON arguments; its value as the page returned it. */
export async function call<T>(page: CdpSession, fn: string, ...args: unknown[]): Promise<T> {
  const r = await page.send<{ result?: { value?: unknown }; exceptionDetails?: { text?: string } }>(
    "Runtime.evaluate",
    {
      expression: `(${fn})(${args.map((a) => JSON.stringify(a ?? null)).join(",")})`,
      returnByValue: true,
      awaitPromise: true,
    },
  );
  if (r.exceptionDetails)
    throw new PageFailure(`the page's script failed: ${String(r.exceptionDetails.text ?? "").slice(0, 200)}`);
  return r.result?.value as T;
}

/** Navigates and waits for the load event; the main document's status, or why it failed. */
export async function navigate(page: CdpSession, url: string): Promise<{ status: number | null }> {
  await page.send("Page.enable");
  await page.send("Network.enable");
  let status: number | null = null;
  let loader: string | undefined;
  const offResponse = page.on(
    "Network.responseReceived",
    (p: { loaderId?: string; type?: string; response?: { status?: number } }) => {
      if (p.type === "Document" && (loader === undefined || p.loaderId === loader))
        status = typeof p.response?.status === "number" ? p.response.status : null;
    },
  );
  let loaded!: () => void;
  const load = new Promise<void>((r) => (loaded = r));
  const offLoad = page.on("Page.loadEventFired", () => loaded());
  try {
    const nav = await page.send<{ loaderId?: string; errorText?: string }>("Page.navigate", { url });
    loader = nav.loaderId;
    if (nav.errorText) throw new PageFailure(explainNetError(nav.errorText));
    await load;
    return { status };
  } finally {
    offResponse();
    offLoad();
  }
}

/** After a click or a key: if a navigation starts within a moment, its end is waited for. */
export async function settle(page: CdpSession, act: () => Promise<void>, quietMs = 700): Promise<void> {
  await page.send("Page.enable");
  let started = false;
  let stopped!: () => void;
  const done = new Promise<void>((r) => (stopped = r));
  const offs = [
    page.on("Page.frameStartedLoading", () => (started = true)),
    page.on("Page.frameStoppedLoading", () => stopped()),
    page.on("Page.loadEventFired", () => stopped()),
  ];
  try {
    await act();
    await new Promise((r) => setTimeout(r, quietMs));
    if (started) await done;
  } finally {
    for (const off of offs) off();
  }
}

/** An element by CSS selector or by its visible text: its centre, scrolled into view. */
export const FIND = `function (selector, text) {
  let el = null;
  if (selector) {
    try { el = document.querySelector(selector); } catch (e) { return { error: "the selector is not valid CSS" }; }
  } else if (text) {
    const want = String(text).trim().toLowerCase();
    const all = Array.from(document.querySelectorAll('a,button,input[type=submit],input[type=button],[role=button],[role=link],label,summary,[onclick]'));
    const label = (c) => String(c.innerText || c.value || c.getAttribute('aria-label') || '').trim().toLowerCase();
    el = all.find((c) => label(c) === want) || all.find((c) => label(c).includes(want)) || null;
  }
  if (!el) return { found: false };
  el.scrollIntoView({ block: 'center', inline: 'center' });
  const r = el.getBoundingClientRect();
  return { found: true, x: r.left + r.width / 2, y: r.top + r.height / 2, tag: String(el.tagName).toLowerCase() };
}`;

/** Focuses an element for typing, its current value selected (so typing replaces it). */
export const FOCUS = `function (selector) {
  let el = null;
  try { el = document.querySelector(selector); } catch (e) { return { error: "the selector is not valid CSS" }; }
  if (!el) return { found: false };
  el.scrollIntoView({ block: 'center' });
  el.focus();
  if (typeof el.select === 'function') el.select();
  return { found: true, focused: document.activeElement === el, tag: String(el.tagName).toLowerCase() };
}`;

/** The page's text (or an element's), its title and URL, cut in the page to `max` characters. */
export const READ = `function (selector, max) {
  let el = document.body;
  if (selector) {
    try { el = document.querySelector(selector); } catch (e) { return { error: "the selector is not valid CSS" }; }
    if (!el) return { found: false };
  }
  const text = el ? String(el.innerText || el.textContent || '') : '';
  return { found: true, title: String(document.title).slice(0, 500), url: String(location.href).slice(0, 2000), text: text.slice(0, max), length: text.length };
}`;

/** A real click (mouse pressed and released) at a point of the viewport. */
export async function clickAt(page: CdpSession, x: number, y: number): Promise<void> {
  for (const type of ["mousePressed", "mouseReleased"])
    await page.send("Input.dispatchMouseEvent", { type, x, y, button: "left", clickCount: 1 });
}

/** The Enter key, down and up (a form's implicit submission). */
export async function pressEnter(page: CdpSession): Promise<void> {
  const key = { key: "Enter", code: "Enter", windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13 };
  await page.send("Input.dispatchKeyEvent", { type: "keyDown", ...key, text: "\r" });
  await page.send("Input.dispatchKeyEvent", { type: "keyUp", ...key });
}

/** Chromium's network errors, as the agent should read them. */
function explainNetError(code: string): string {
  if (/TUNNEL_CONNECTION_FAILED|PROXY_CONNECTION_FAILED|PROXY/.test(code))
    return `the page did not load (${code}): the egress proxy refused the connection; the host is not allowed by the agent's network policy (see the agent's egress record)`;
  if (/NAME_NOT_RESOLVED/.test(code)) return `the page did not load (${code}): the host's name is unknown`;
  if (/ABORTED/.test(code))
    return `the page did not load (${code}): it was a download, or the load was aborted`;
  return `the page did not load (${code})`;
}
