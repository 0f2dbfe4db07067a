// The agent's browser as people see it: GET /api/agents/:id/browser (its state) and the
// WebSocket of /api/agents/:id/browser/watch. Binary frames from the server are the page's
// frames (JPEG images, nothing else); text frames carry these JSON messages both ways.
import { z } from "zod";
import { BROWSER_KEYS } from "./lists.js";

/** The largest frame edge asked of the screencast, in pixels. */
export const BROWSER_FRAME_MAX_EDGE = 1280;
/** The screencast's JPEG quality (0-100). */
export const BROWSER_FRAME_QUALITY = 60;
/** A watcher gets at most one frame every this many milliseconds. */
export const BROWSER_FRAME_EVERY_MS = 100;
/** The largest WebSocket message the server takes from a watcher. */
export const BROWSER_WATCH_MAX_MESSAGE_BYTES = 16 * 1024;
/** The longest text one input message inserts. */
export const BROWSER_TEXT_MAX = 2000;

export const BrowserTab = z
  .object({
    id: z.string(),
    url: z.string(),
    title: z.string(),
    active: z.boolean().describe("the tab the agent's tools and the watch stream act on"),
  })
  .strict()
  .meta({ id: "BrowserTab" });

export const BrowserStateView = z
  .object({
    state: z.enum(["stopped", "starting", "running"]),
    url: z.string().nullable().describe("the active tab's address; null while no browser runs"),
    tabs: z.array(BrowserTab),
  })
  .strict()
  .meta({
    id: "BrowserState",
    description: "the agent's browser: whether it runs, its active page, its tabs",
  });

const coord = z.number().finite().min(0).max(100_000);
const button = z.enum(["left", "middle", "right"]);

/** What a watcher may send (text frames). Coordinates are the page's CSS pixels (see `viewport`). */
export const BrowserWatchInput = z.discriminatedUnion("type", [
  z.object({ type: z.literal("click"), x: coord, y: coord, button: button.optional() }).strict(),
  z.object({ type: z.literal("key"), key: z.enum(BROWSER_KEYS) }).strict(),
  z
    .object({
      type: z.literal("text"),
      text: z
        .string()
        .min(1)
        .max(BROWSER_TEXT_MAX)
        .refine((s) => !s.includes("\u0000"), "no NUL"),
    })
    .strict(),
  z
    .object({
      type: z.literal("scroll"),
      x: coord,
      y: coord,
      dx: z.number().finite().min(-10_000).max(10_000),
      dy: z.number().finite().min(-10_000).max(10_000),
    })
    .strict(),
  z.object({ type: z.literal("back") }).strict(),
]);

/** What the server sends in a text frame. */
export const BrowserWatchMessage = z
  .discriminatedUnion("type", [
    z
      .object({
        type: z.literal("attached"),
        mode: z.enum(["write", "watch"]).describe("watch: this watcher's input is dropped"),
      })
      .strict(),
    z
      .object({
        type: z.literal("viewport"),
        width: z.number().describe("the page's width in CSS pixels (what input coordinates are in)"),
        height: z.number(),
      })
      .strict(),
    z
      .object({ type: z.literal("page"), url: z.string().nullable(), tabs: z.array(BrowserTab) })
      .strict()
      .describe("the active tab's address and the tabs, sent on attaching and when they change"),
    z
      .object({ type: z.literal("dropped"), reason: z.string() })
      .strict()
      .describe("the input was not sent to the browser (a role that watches)"),
    z.object({ type: z.literal("error"), code: z.string(), message: z.string() }).strict(),
    z
      .object({ type: z.literal("ended"), reason: z.string() })
      .strict()
      .describe("the stream ends (the browser stopped, the server stops); also the close frame's reason"),
  ])
  .meta({ id: "BrowserWatchMessage" });
