// Debian's Chromium on this host as the tests that drive it by playwright start it: headless,
// no sandbox of its own (tests run as root), and nothing of its own on the network.
export const CHROMIUM = "/usr/bin/chromium";

export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
