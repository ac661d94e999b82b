/**
 * A reader that stops early (`session-etl config | head -1`, `sessions … | less` then q) closes
 * the pipe, and the next write fails with EPIPE. Node ignores SIGPIPE, so without a listener the
 * 'error' event is unhandled and the process dies with a stack trace and exit 1. Instead the rest
 * of that stream's output is dropped quietly and the command ends with its own exit code (0 for
 * `config | head -1`): a run whose log reader went away still finishes, commits and reports its
 * outcome in the exit code rather than stopping half-way with a code that hides what happened.
 */
export function dropOutputOnEpipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    // After EPIPE the stream is destroyed; later writes fail with ERR_STREAM_DESTROYED.
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') return;
    throw err;
  });
}

/**
 * Resolves, once everything written to `stream` so far has gone out, to whether its reader is
 * still there: false when a write failed (EPIPE) or the stream was destroyed. A note about output
 * (`note: wrote 100 of 160 …` on stderr) is for a reader that got the output, so it waits for this.
 */
export function outputStillRead(stream: NodeJS.WritableStream): Promise<boolean> {
  const s = stream as NodeJS.WritableStream & { destroyed?: boolean; errored?: unknown };
  if (s.destroyed || s.errored) return Promise.resolve(false);
  return new Promise((resolve) => {
    s.write('', (err) => resolve(!err && !s.destroyed && !s.errored));
  });
}
