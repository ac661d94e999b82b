/**
 * A progress bar with ETA on a terminal (cli-progress); nothing otherwise (the log lines say enough).
 *
 * The bar and the log share the terminal, so log lines go out through `writeLines`: with a bar
 * drawn on that stream, it clears the bar's line, writes the lines, and draws the bar again below
 * them. `stop` clears the bar and leaves the cursor at the start of that empty line, so whatever
 * follows (the summary, the Ctrl-C message) starts on a clean line.
 */
import { clearLine, cursorTo } from 'node:readline';
import cliProgress from 'cli-progress';
import type { Progress } from '../pipeline/run.js';

export interface RunProgress {
  update(p: Progress): void;
  /**
   * Clears the bar (once drawn) and shows the cursor again. With `final` (the summary's counts,
   * `finalProgress`), the bar's last frame shows them first: the last window's count reaches the
   * bar only after its commit was reported, so without them the last frame would stop short.
   */
  stop(final?: Progress): void;
}

/** The counts a run's summary ends with, as the bar's last frame shows them. */
export function finalProgress(s: { windows: { total: number; done: number }; sessions: { fetched?: number } }): Progress {
  return { windowsTotal: s.windows.total, windowsDone: s.windows.done, sessions: s.sessions.fetched ?? 0 };
}

/** Back to column 0, and erase the whole line. */
export const CLEAR_LINE = '\r\x1b[2K';

/** The bar drawn on each stream now, redrawn after each log line written there. */
const drawnOn = new Map<NodeJS.WritableStream, () => void>();

/** Writes whole lines (ending in a newline) to `stream` without mixing them into a bar drawn there. */
export function writeLines(stream: NodeJS.WritableStream, text: string): void {
  const redraw = drawnOn.get(stream);
  if (!redraw) {
    stream.write(text);
    return;
  }
  stream.write(CLEAR_LINE + text);
  redraw();
}

export function createProgress(enabled: boolean, stream: NodeJS.WriteStream = process.stderr): RunProgress {
  if (!enabled || !stream.isTTY) return { update() {}, stop() {} };
  const width = () => stream.columns || 80;
  // cli-progress's own terminal saves the cursor position when the bar starts and restores it when
  // it stops: after log lines have scrolled the screen, that jumps back up and the summary is
  // written over earlier lines. This one never moves the cursor off the bar's line.
  const terminal = {
    isTTY: () => true,
    getWidth: width,
    cursorSave() {},
    cursorRestore() {},
    cursor: (show: boolean) => void stream.write(show ? '\x1b[?25h' : '\x1b[?25l'),
    lineWrapping() {},
    cursorTo: (x: number | null) => void cursorTo(stream, x ?? 0),
    clearRight: () => void clearLine(stream, 1),
    clearLine: () => void clearLine(stream, 0),
    // Cut to the width: a wrapped bar could not be redrawn in place.
    write: (s: string) => void stream.write(s.slice(0, width() - 1)),
    newline: () => void stream.write('\n'),
  };
  const bar = new cliProgress.SingleBar(
    {
      stream,
      terminal,
      // Records fetched, as the summary's 'records fetched' (its 'written' counts each session once).
      format: '{bar} {value}/{total} windows | {sessions} records fetched | ETA {eta_formatted}',
      hideCursor: true,
      clearOnComplete: true,
      // Redraw on the next tick even when the text is unchanged: a log line may have cleared it.
      forceRedraw: true,
    } as cliProgress.Options,
    cliProgress.Presets.shades_classic,
  );
  let drawn = false;
  return {
    update(p) {
      if (!drawn) {
        bar.start(p.windowsTotal, p.windowsDone, { sessions: p.sessions });
        drawnOn.set(stream, () => bar.render());
        drawn = true;
      }
      bar.update(p.windowsDone, { sessions: p.sessions });
    },
    stop(final) {
      if (!drawn) return;
      drawn = false;
      drawnOn.delete(stream);
      if (final) {
        bar.setTotal(final.windowsTotal);
        bar.update(final.windowsDone, { sessions: final.sessions });
      }
      // cli-progress draws the last frame, then clears it.
      bar.stop();
    },
  };
}
