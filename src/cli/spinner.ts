// A small spinner on stderr while the CLI waits (a run, a box starting). Only on a terminal:
// piped output and --json output never hold its bytes.

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export interface Spinner {
  /** Takes the spinner's line away; safe to call more than once. */
  stop(): void;
}

const idle: Spinner = { stop: () => {} };

export interface SpinnerOptions {
  /** Milliseconds between frames. */
  intervalMs?: number;
  /** Nothing is drawn for a wait shorter than this. */
  delayMs?: number;
}

/** True for a stream that is a terminal (process.stderr on a TTY). */
export function isTerminal(stream: NodeJS.WritableStream): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true;
}

/** Draws `label` after a turning frame on `stream` until stopped; nothing when `enabled` is false. */
export function startSpinner(
  stream: NodeJS.WritableStream,
  label: string,
  enabled: boolean,
  { intervalMs = 80, delayMs = 150 }: SpinnerOptions = {},
): Spinner {
  if (!enabled) return idle;
  let frame = 0;
  let drawn = false;
  let interval: NodeJS.Timeout | undefined;
  const draw = () => {
    drawn = true;
    stream.write(`\r${FRAMES[frame++ % FRAMES.length]} ${label}`);
  };
  const delay = setTimeout(() => {
    draw();
    interval = setInterval(draw, intervalMs);
    interval.unref();
  }, delayMs);
  delay.unref();
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      clearTimeout(delay);
      clearInterval(interval);
      // Back to the start of the line and clear it, so what follows is written where the spinner was.
      if (drawn) stream.write("\r\x1b[K");
    },
  };
}
