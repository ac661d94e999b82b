/**
 * A progress bar with ETA on a terminal (cli-progress); nothing otherwise. Log lines go out through
 * `writeLines`, which clears the bar, writes them and redraws it below; `stop` leaves the cursor on a clean line.
 */
import { clearLine, cursorTo } from 'node:readline';
import cliProgress from 'cli-progress';
import type { Progress } from '../pipeline/run.js';

export interface RunProgress {
  update(p: Progress): void;
  /** Clears the bar; with `final`, its last frame shows them first (the last window's commit is reported after it ends). */
  stop(final?: Progress): void;
}

/** The counts a run's summary ends with, as the bar's last frame shows them. */
export function finalProgress(s: { windows: { total: number; done: number }; sessions: { fetched?: number } }): Progress {
  return { windowsTotal: s.windows.total, windowsDone: s.windows.done, sessions: s.sessions.fetched ?? 0 };
}

export const CLEAR_LINE = '\r\x1b[2K';

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
      bar.stop();
    },
  };
}
