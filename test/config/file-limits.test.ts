/**
 * Issue 38 (LOW): files the configuration reads. An API key file readable by others (mode 0644)
 * was accepted silently; a 200 MB configuration file was read whole. Both are refused (exit 2)
 * naming the file and what to do, before anything of them is used or shown.
 */
import { chmodSync, existsSync, mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { resolveAccounts } from '../../src/accounts/resolve.js';
import { exitCodeOf } from '../../src/index.js';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'session-etl-file-limits-'));
const KEY = 'rk-ModeTest-7Qx2Lm9Vb4';

function keyFile(name: string, mode: number): string {
  const p = join(dir, name);
  writeFileSync(p, `${KEY}\n`);
  chmodSync(p, mode);
  return p;
}

function refusal(f: () => unknown): { message: string; exit: number } {
  try {
    f();
  } catch (err) {
    return { message: (err as Error).message, exit: exitCodeOf(err) };
  }
  throw new Error('it was accepted');
}

describe('an API key file others can read is refused', () => {
  it.each([
    [0o644, 'readable'],
    [0o604, 'readable'],
    [0o602, 'writable'],
  ])('mode %o: exit 2 naming the file, its mode and chmod 600; nothing of the key shown', (mode, what) => {
    const p = keyFile(`key-${mode.toString(8)}`, mode);
    const r = refusal(() => loadConfig({ env: { REPORTING_API_KEY_FILE: p } }));
    expect(r.exit).toBe(2);
    expect(r.message).toBe(
      `REPORTING_API_KEY_FILE ${p} is ${what} by every user of this machine (mode 0${mode.toString(8)}): a key file must be readable by its owner only (or its group); run chmod 600 ${p} (a Kubernetes Secret volume: give it defaultMode: 0400)`,
    );
    expect(r.message).not.toContain(KEY);
  });

  it.each([0o600, 0o400, 0o640, 0o440])('mode %o (the owner, or its group as Kubernetes fsGroup gives it) is read', (mode) => {
    const p = keyFile(`ok-${mode.toString(8)}`, mode);
    expect(loadConfig({ env: { REPORTING_API_KEY_FILE: p } }).config.apiKey).toBe(KEY);
  });

  it("many accounts: an account's key file of mode 0644 fails that account, naming the file and the fix", () => {
    const p = keyFile('acme.key', 0o644);
    const cfg = join(dir, 'accounts.json');
    writeFileSync(cfg, JSON.stringify({ reportingUrl: 'http://127.0.0.1:9/', accounts: { acme: { apiKeyFile: p } } }));
    const [acme] = resolveAccounts(loadConfig({ configFile: cfg, env: {} }), ['acme'], {});
    expect(acme!.keyError).toBe(`its key file ${p} (apiKeyFile) is readable by every user of this machine (mode 0644): a key file must be readable by its owner only (or its group); run chmod 600 ${p} (a Kubernetes Secret volume: give it defaultMode: 0400)`);
    expect(acme!.loaded.config.apiKey).toBeNull();
  });

  it('the CLI: a command that fetches exits 2 with the message on stderr; `config` shows the file UNUSABLE and exits 0 (issue 42 #9)', async () => {
    const p = keyFile('cli.key', 0o644);
    const data = join(dir, 'cli-data');
    const r = await runCli(['export'], { REPORTING_API_KEY_FILE: p, SESSION_ETL_DATA_DIR: data });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`error: REPORTING_API_KEY_FILE ${p} is readable by every user of this machine (mode 0644)`);
    expect(r.stderr + r.stdout).not.toContain(KEY);
    expect(existsSync(data)).toBe(false);
    const shown = await runCli(['config'], { REPORTING_API_KEY_FILE: p, SESSION_ETL_DATA_DIR: data });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`UNUSABLE: key file ${p} is readable by every user of this machine (mode 0644)`);
    expect(shown.stderr).toContain(`warning: key file ${p} is readable by every user of this machine (mode 0644)`);
    expect(shown.stderr + shown.stdout).not.toContain(KEY);
  });
});

describe('a configuration file larger than 4 MiB is refused before it is read', () => {
  it('200 MB: exit 2 naming the file and its size, at once', () => {
    const p = join(dir, 'huge.json');
    writeFileSync(p, '{"logLevel": "info", "notes": "');
    truncateSync(p, 200 * 1000 * 1000); // sparse: the size is there without the disk
    const t0 = Date.now();
    const r = refusal(() => loadConfig({ configFile: p, env: {} }));
    expect(r.exit).toBe(2);
    expect(r.message).toBe(`configuration file ${p} is 190.7 MiB, larger than the 4 MiB a configuration file may be: is it the right file? (none of it is shown)`);
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('an endless file (/dev/zero) stops at the cap', () => {
    const r = refusal(() => loadConfig({ configFile: '/dev/zero', env: {} }));
    expect(r.exit).toBe(2);
    expect(r.message).toContain('configuration file /dev/zero is more than 4 MiB');
  });

  it('a large but real one (10,000 accounts, about 1 MB) is read', () => {
    const accounts = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`account-${i}`, { apiKeyEnv: `ACCOUNT_${i}_KEY`, startDate: '2026-01-01' }]));
    const p = join(dir, 'many.json');
    writeFileSync(p, JSON.stringify({ reportingUrl: 'http://127.0.0.1:9/', accounts }, null, 2));
    expect(Object.keys(loadConfig({ configFile: p, env: {} }).config.accounts ?? {})).toHaveLength(10_000);
  });
});
