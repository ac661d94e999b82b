/**
 * config/ (issue 33): the deployment's files a user copies, each checked as a user would use it.
 * The example configurations are accepted by `session-etl config --config FILE`; the systemd unit
 * passes `systemd-analyze verify` and its ExecStart, run as the unit would run it (its Environment,
 * its arguments, its stop signal), starts the scheduler with /healthz and stops within
 * TimeoutStopSec with exit 0. (The alert rules: test/monitoring/alerts.test.ts; the Kubernetes
 * manifests: test/config/kubernetes.test.ts.)
 */
import { execFile, spawnSync } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { GLIBC_SETTINGS } from '../../src/config/memory-budget.js';
import { BIN, REPO_ROOT, runCli, startCli, waitFor } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';

const CONFIG = join(REPO_ROOT, 'config');
const UNIT = join(CONFIG, 'systemd', 'session-etl.service');
const fx = useEmulator({ seed: 33, sessionsPerDay: 30 }, { prefix: 'session-etl-deploy-' });

/** The unit file's [Service] settings, each key's values in order. */
function serviceSettings(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const s = /^\[(.+)\]$/.exec(line);
    if (s) {
      section = s[1]!;
      continue;
    }
    const kv = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (section === 'Service' && kv) out.set(kv[1]!, [...(out.get(kv[1]!) ?? []), kv[2]!]);
  }
  return out;
}

describe('glibc\'s allocator settings (issue 39)', () => {
  it('every launcher we ship sets them: the Dockerfile, the systemd unit and the Kubernetes CronJob', async () => {
    const dockerfile = await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    const dockerEnv = Object.fromEntries(
      [...dockerfile.matchAll(/^ENV (.+)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/).map((kv) => kv.split('=') as [string, string])),
    );
    const unit = Object.fromEntries(serviceSettings(await readFile(UNIT, 'utf8')).get('Environment')!.map((e) => e.split('=') as [string, string]));
    const docs = parseAllDocuments(await readFile(join(CONFIG, 'kubernetes', 'cronjob.yaml'), 'utf8')).map((d) => d.toJS() as Record<string, any>);
    const job = docs.find((d) => d.kind === 'CronJob')!;
    const k8s = Object.fromEntries(
      (job.spec.jobTemplate.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>).map((e) => [e.name, e.value]),
    );
    for (const [where, env] of [['Dockerfile', dockerEnv], ['systemd unit', unit], ['CronJob', k8s]] as const) {
      for (const [k, v] of Object.entries(GLIBC_SETTINGS)) expect(env[k], `${where}: ${k}`).toBe(v);
    }
  });
});

describe('config/examples', () => {
  it('every example configuration is accepted by `session-etl config --config FILE`, as the docs show it', async () => {
    const files = (await readdir(join(CONFIG, 'examples'))).filter((f) => f.endsWith('.json')).sort();
    expect(files).toEqual(['many-accounts.json', 'object-storage.json', 'one-account.json']);
    const dir = await fx.tempDir();
    const keyFile = join(dir, 'reporting.key');
    await writeFile(keyFile, 'a-key', { mode: 0o600 });
    for (const f of files) {
      // `config` reads a single account's key file (it must exist): the example's path, here a temporary one.
      const raw = JSON.parse(await readFile(join(CONFIG, 'examples', f), 'utf8')) as Record<string, unknown>;
      const file = join(dir, f);
      await writeFile(file, JSON.stringify(raw.apiKeyFile ? { ...raw, apiKeyFile: keyFile } : raw));
      const r = await runCli(['config', '--config', file, '--json'], {});
      expect(r.code, `${f}: ${r.stderr}`).toBe(0);
      expect(r.stderr, f).toBe('');
      const shown = JSON.parse(r.stdout) as { values: Array<{ key: string; source: string }> };
      const sources = new Map(shown.values.map((v) => [v.key, v.source]));
      // Every key of the file is taken from the file (none ignored or overridden by a default).
      for (const k of Object.keys(raw).filter((k) => k !== 'accounts')) expect(sources.get(k), `${f}: ${k}`).toBe('file');
    }
  });
});

describe('config/systemd/session-etl.service', () => {
  const text = () => readFile(UNIT, 'utf8');

  it('passes systemd-analyze verify (with ExecStart pointing at this checkout)', async () => {
    const analyze = spawnSync('systemd-analyze', ['--version']);
    if (analyze.error) {
      if (process.env.CI === 'true') throw new Error('systemd-analyze is missing: apt-get install systemd (CI installs it)');
      console.warn('skipping systemd-analyze verify: systemd-analyze is not installed');
      return;
    }
    const dir = await fx.tempDir();
    const copy = join(dir, 'session-etl.service');
    await writeFile(copy, (await text()).replace('/usr/local/bin/session-etl', BIN));
    const r = await promisify(execFile)('systemd-analyze', ['verify', copy]).catch((e: { code: number; stderr: string }) => e);
    expect('code' in r ? r.code : 0, r.stderr).toBe(0);
    // Unknown or misspelt keys are only warned about: none may be.
    expect(r.stderr).not.toMatch(/Unknown key|Failed to parse|Invalid|ignoring/i);
  });

  it('is sandboxed: systemd-analyze security rates it 2.0 or less ("OK"; it was 8.5 EXPOSED), the key given as a credential', async () => {
    const analyze = spawnSync('systemd-analyze', ['--version']);
    if (analyze.error) {
      if (process.env.CI === 'true') throw new Error('systemd-analyze is missing: apt-get install systemd (CI installs it)');
      console.warn('skipping systemd-analyze security: systemd-analyze is not installed');
      return;
    }
    const dir = await fx.tempDir();
    const copy = join(dir, 'session-etl.service');
    await writeFile(copy, await text());
    const r = spawnSync('systemd-analyze', ['security', '--offline=true', '--no-pager', copy], { encoding: 'utf8' });
    const m = /Overall exposure level for session-etl\.service: (\d+\.\d+) (\w+)/.exec(r.stdout);
    expect(m, r.stdout + r.stderr).not.toBeNull();
    expect(Number(m![1]), r.stdout).toBeLessThanOrEqual(2.0);
    expect(m![2]).toBe('OK');
    const s = serviceSettings(await text());
    // The key reaches the service as a credential, and the run reads it there.
    expect(s.get('LoadCredential')).toEqual(['reporting.key:/etc/session-etl/reporting.key']);
    expect(s.get('Environment')).toContain('REPORTING_API_KEY_FILE=%d/reporting.key');
    // V8's JIT needs writable, then executable memory: the unit must not ask for what would crash Node.
    expect(s.has('MemoryDenyWriteExecute')).toBe(false);
  });

  it('its ExecStart, run with its Environment, starts the scheduler with /healthz; its KillSignal stops it within TimeoutStopSec, exit 0', async () => {
    const s = serviceSettings(await text());
    const [exec] = s.get('ExecStart')!;
    const [binary, ...args] = exec!.split(/\s+/);
    expect(binary).toBe('/usr/local/bin/session-etl');
    // The configuration the install notes put there (the one-account example), pointed at the emulator
    // and a temporary data directory; the key where LoadCredential= puts it, a 0400 file in the
    // credentials directory (%d), as systemd gives it.
    const dir = await fx.tempDir();
    const credentials = join(dir, 'credentials');
    await mkdir(credentials, { mode: 0o700 });
    const [credential] = s.get('LoadCredential')![0]!.split(':');
    const keyFile = join(credentials, credential!);
    await writeFile(keyFile, fx.emu.apiKey, { mode: 0o400 });
    await chmod(keyFile, 0o400);
    const env = Object.fromEntries(s.get('Environment')!.map((e) => e.replace('%d', credentials).split('=') as [string, string]));
    expect(env.SESSION_ETL_CONFIG).toBe('/etc/session-etl/config.json');
    expect(env.REPORTING_API_KEY_FILE).toBe(keyFile);
    const example = JSON.parse(await readFile(join(CONFIG, 'examples', 'one-account.json'), 'utf8')) as Record<string, unknown>;
    const config = join(dir, 'config.json');
    // The example's apiKeyFile (/etc/session-etl/reporting.key) is left as it is: REPORTING_API_KEY_FILE wins.
    await writeFile(config, JSON.stringify({ ...example, reportingUrl: fx.emu.url, dataDir: join(dir, 'data') }));
    const portArgs = args.map((a, i) => (args[i - 1] === '--http-port' ? '0' : a));
    const child = startCli(portArgs, { ...env, SESSION_ETL_CONFIG: config });
    let base = '';
    try {
      await waitFor(() => {
        const m = /^Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/m.exec(child.output());
        if (m) base = m[1]!;
        return (Boolean(m) && /scheduler running/.test(child.output())) || child.exitCode !== null;
      }, 30_000, 'the metrics URL and the scheduler');
      expect(base, child.output()).not.toBe('');
      expect(child.output()).toMatch(/scheduler running: nightly-export at "0 2 \* \* \*" \(UTC\)/);
      const h = await fetch(`${base}/healthz`);
      expect([200, 503]).toContain(h.status);
      expect(((await h.json()) as { reasons?: unknown }).reasons).toBeDefined();
    } finally {
      const t0 = Date.now();
      child.kill(s.get('KillSignal')![0] as NodeJS.Signals);
      const r = await child.result;
      expect(r.code, r.stderr).toBe(0);
      expect(Date.now() - t0).toBeLessThan(Number(s.get('TimeoutStopSec')![0]) * 1000);
    }
  }, 60_000);
});
