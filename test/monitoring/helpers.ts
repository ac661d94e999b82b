/** Helpers of the monitoring tests: Prometheus' own tools (Debian's `prometheus` package) and a small exposition reader. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** Runs promtool; the tests need it (CI installs it with apt: see .ci/run). */
export function promtool(args: string[], stdin?: string): { code: number | null; output: string } {
  const r = spawnSync('promtool', args, { input: stdin ?? '', encoding: 'utf8' });
  if (r.error) throw new Error(`promtool cannot run (${r.error.message}): install Debian's prometheus package (apt-get install prometheus)`);
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}

/**
 * `promtool check metrics` on an exposition: it must parse, and lint clean except for prom-client's
 * default `nodejs_active_*_total` gauges (named by prom-client, not by us).
 */
export function checkExposition(text: string): { code: number | null; problems: string[] } {
  const r = promtool(['check', 'metrics'], text);
  const problems = r.output.split('\n').filter((l) => l.trim() && !/^nodejs_active_\w+_total non-counter metrics should not have "_total" suffix$/.test(l));
  return { code: r.code, problems };
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a text exposition (enough of the format for our own output; promtool checks the rest). */
export function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of one series; throws when it is missing. */
export function value(text: string, name: string, labels: Record<string, string> = {}): number {
  const s = samples(text).find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  if (!s) throw new Error(`no sample ${name}${JSON.stringify(labels)} in the exposition`);
  return s.value;
}

/** A port free right now on loopback (for programs that cannot take port 0 and tell). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** A real Prometheus server scraping `target` (host:port) every second. */
export async function startPrometheus(target: string, dir: string): Promise<{ url: string; process: ChildProcess; stop(): Promise<void> }> {
  const { writeFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const config = join(dir, 'prometheus.yml');
  await writeFile(
    config,
    ['global:', '  scrape_interval: 1s', 'scrape_configs:', '  - job_name: session-etl', '    static_configs:', `      - targets: ['${target}']`, ''].join('\n'),
  );
  const version = spawnSync('prometheus', ['--version'], { encoding: 'utf8' });
  if (version.error) throw new Error(`prometheus cannot run (${version.error.message}): install Debian's prometheus package (apt-get install prometheus)`);
  const port = await freePort();
  const child = spawn(
    'prometheus',
    [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.once('error', (err) => (log += `cannot start prometheus: ${err.message}`));
  return {
    url: `http://127.0.0.1:${port}`,
    process: Object.assign(child, { log: () => log }),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
