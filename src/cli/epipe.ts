/**
 * A reader that stops early (`config | head -1`) makes the next write fail with EPIPE, which Node (ignoring
 * SIGPIPE) would turn into a crash with exit 1. The rest of that stream's output is dropped instead: a run
 * whose log reader went away still finishes, commits and reports its outcome in the exit code.
 */
export function dropOutputOnEpipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    // After EPIPE the stream is destroyed; later writes fail with ERR_STREAM_DESTROYED.
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') return;
    throw err;
  });
}

/** Resolves, once what was written to `stream` has gone out, to whether its reader is still there (a note about output waits for it). */
export function outputStillRead(stream: NodeJS.WritableStream): Promise<boolean> {
  const s = stream as NodeJS.WritableStream & { destroyed?: boolean; errored?: unknown };
  if (s.destroyed || s.errored) return Promise.resolve(false);
  return new Promise((resolve) => {
    s.write('', (err) => resolve(!err && !s.destroyed && !s.errored));
  });
}
