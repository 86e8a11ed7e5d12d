/**
 * What a running tool's live output costs. The RFC sends the whole ToolCall on every update
 * and replaces `live_content` each time, so the cost of an update is the size of
 * `live_content` and the cost of a call is that times the number of updates. Both are bounded
 * here: `live_content` is the tail a terminal would show (at most `windowBytes`), and updates
 * are coalesced — at most one per interval, the interval doubling every `DOUBLE_EVERY`
 * updates up to `maxIntervalMs`, so a long, chatty command sends fewer updates as its output
 * grows. The full output (capped by the tool) comes once, with the call's result.
 */

/** Limits of live output (config: LIVE_OUTPUT_WINDOW_BYTES, LIVE_OUTPUT_INTERVAL_MS, LIVE_OUTPUT_MAX_INTERVAL_MS). */
export interface LiveOutputOptions {
  /** The most of the output's tail shown in `live_content` (UTF-8 bytes, approximately: counted in UTF-16 units). */
  windowBytes: number;
  /** The least time between two updates of one call. */
  intervalMs: number;
  /** The most time between two updates while output keeps coming. */
  maxIntervalMs: number;
}

export const DEFAULT_LIVE_OUTPUT: Readonly<LiveOutputOptions> = Object.freeze({
  windowBytes: 32 * 1024,
  intervalMs: 100,
  maxIntervalMs: 2_000,
});

/** The interval doubles after this many updates of one call. */
const DOUBLE_EVERY = 16;

/** The first line of a window that does not start at the beginning of the output. */
export const WINDOW_HEAD = '[... earlier output not shown here; the result carries the full output ...]\n';

/**
 * The tail of `text` a terminal would show: at most `max` characters, starting at a line
 * boundary when one is near, marked with {@link WINDOW_HEAD} when something was cut.
 */
export function outputWindow(text: string, max: number): string {
  if (text.length <= max) return text;
  let start = text.length - max + WINDOW_HEAD.length;
  const newline = text.indexOf('\n', start);
  // Whole lines when the cut line is not too long (a terminal shows whole lines).
  if (newline >= 0 && newline < text.length - 1 && newline - start < max / 4) start = newline + 1;
  // Do not cut a surrogate pair in half.
  const code = text.charCodeAt(start);
  if (code >= 0xdc00 && code <= 0xdfff) start++;
  return WINDOW_HEAD + text.slice(start);
}

/** Delay before the update after `sent` updates. */
export function liveInterval(sent: number, opts: LiveOutputOptions): number {
  return Math.min(opts.maxIntervalMs, opts.intervalMs * 2 ** Math.floor(sent / DOUBLE_EVERY));
}

/**
 * Coalesces one call's live output: `push` the whole text so far as often as the tool likes;
 * `publish` gets the window of the latest text at most once per interval. `close` drops
 * what is pending (the result replaces live output).
 */
export class LiveOutputFeed {
  private latest: string | undefined;
  private shown: string | undefined;
  private sent = 0;
  private lastAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly publish: (window: string) => void,
    private readonly opts: LiveOutputOptions = DEFAULT_LIVE_OUTPUT,
  ) {}

  push(text: string): void {
    if (this.closed) return;
    this.latest = text;
    if (this.timer !== undefined) return;
    const wait = this.lastAt + liveInterval(this.sent, this.opts) - Date.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private flush(): void {
    this.timer = undefined;
    if (this.closed || this.latest === undefined) return;
    const window = outputWindow(this.latest, this.opts.windowBytes);
    this.latest = undefined;
    if (window === this.shown) return;
    this.shown = window;
    this.sent += 1;
    this.lastAt = Date.now();
    this.publish(window);
  }
}
