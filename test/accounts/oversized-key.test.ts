/**
 * Issue 28 (HIGH): a key file far larger than any key (a wrong file named as apiKeyFile, a
 * certificate) made every redaction throw a SyntaxError quoting every secret of the process, and
 * the CLI printed it. Through the real CLI against the emulator: such a key fails its own account
 * only (the others complete), and no secret of any account, nor the webhook's token, nor any of the
 * oversized key, appears in stdout, stderr or any file under the data directory, in any form.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { filesUnder } from '../reliability/secrets.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 5 * D;
const TO = FROM + 2 * D;

// Distinctive keys with '/' and '+' (their JSON, URL and base64 forms differ from the plain text).
const KEYS = {
  acme: `acme/Key+${randomBytes(12).toString('hex')}`,
  globex: `globex/Key+${randomBytes(12).toString('hex')}`,
  initech: `initech/Key+${randomBytes(12).toString('hex')}`,
};
const HOOK_TOKEN = `hookToken${randomBytes(12).toString('hex')}`;
/** ~100 KB of base64 text: what a wrong file (a certificate, say) holds. */
const HUGE = randomBytes(75_000).toString('base64');

const fx = useEmulator(
  { seed: 28, accounts: Object.entries(KEYS).map(([name, apiKey]) => ({ name, apiKey })), from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 30 },
  { prefix: 'session-etl-oversized-key-' },
);
let hook: WebhookReceiver;
const dirs: string[] = [];

beforeAll(async () => {
  hook = await startWebhookReceiver(`/services/T0/B0/${HOOK_TOKEN}`);
});
afterAll(async () => {
  await hook.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Every form a secret may be written in (src/util/redact.ts), and pieces of it cut short. */
function formsOf(secret: string): string[] {
  const forms = [
    secret,
    secret.toLowerCase(),
    secret.toUpperCase(),
    JSON.stringify(secret).slice(1, -1).replaceAll('/', '\\/'),
    encodeURIComponent(secret),
    new URLSearchParams({ k: secret }).toString().slice(2),
    Buffer.from(secret).toString('base64'),
    Buffer.from(secret).toString('base64url'),
    // The inner part of its base64 at offsets 1 and 2 (as in "Basic base64(id:secret)").
    Buffer.from(`x${secret}`).toString('base64').slice(4, -4),
    Buffer.from(`xy${secret}`).toString('base64').slice(4, -4),
  ];
  // Cut short: 16 characters from the middle, and for a huge secret some slices along it.
  const step = Math.max(16, Math.floor(secret.length / 8));
  for (let i = Math.min(4, secret.length - 16); i + 16 <= secret.length; i += step) forms.push(secret.slice(i, i + 16));
  return [...new Set(forms)];
}


/** Where any form of any of `secrets` shows in the run's output or a file under `dataDir`: [] when nowhere. */
async function leaks(r: CliResult, dataDir: string, secrets: Record<string, string>): Promise<string[]> {
  const haystacks: Array<[string, string]> = [['stdout', r.stdout], ['stderr', r.stderr]];
  for (const f of await filesUnder(dataDir)) haystacks.push([f.slice(dataDir.length + 1), (await readFile(f)).toString('latin1')]);
  const found: string[] = [];
  for (const [name, secret] of Object.entries(secrets)) {
    for (const form of formsOf(secret)) {
      for (const [where, text] of haystacks) if (text.includes(form)) found.push(`${name} (${form.slice(0, 24)}…) in ${where}`);
    }
  }
  return found;
}

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'session-etl-oversized-'));
  dirs.push(d);
  return d;
}

describe('a key larger than any key (issue 28)', () => {
  it('many accounts: the one whose apiKeyFile is a 100 KB file fails alone, naming it; no secret of any account or the webhook shows anywhere', async () => {
    const root = await tempDir();
    const data = join(root, 'data');
    await writeFile(join(root, 'acme.key'), `${KEYS.acme}\n`, { mode: 0o600 });
    await writeFile(join(root, 'umbrella.key'), HUGE, { mode: 0o600 });
    const config = join(root, 'config.json');
    await writeFile(config, JSON.stringify({
      dataDir: data,
      reportingUrl: fx.emu.url,
      notifyUrl: hook.url,
      accounts: {
        acme: { apiKeyFile: join(root, 'acme.key') },
        globex: { apiKeyEnv: 'GLOBEX_KEY' },
        initech: { apiKeyEnv: 'INITECH_KEY' },
        umbrella: { apiKeyFile: join(root, 'umbrella.key') },
      },
    }));
    const env = { GLOBEX_KEY: KEYS.globex, INITECH_KEY: KEYS.initech };
    const r = await runCli(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'debug'], env);

    expect(r.code, r.stderr.slice(0, 2000)).toBe(1);
    expect(r.stderr).toMatch(/1 of 4 accounts failed: umbrella/);
    expect(r.stderr).toContain(`  umbrella: its key file ${join(root, 'umbrella.key')} (apiKeyFile) holds more than 4 KiB (4,096 bytes)`);
    const out = JSON.parse(r.stdout) as { accounts: Array<{ account: string; outcome: string; summary?: { sessions: { written: number } } }> };
    expect(out.accounts.map((a) => [a.account, a.outcome])).toEqual([
      ['acme', 'succeeded'], ['globex', 'succeeded'], ['initech', 'succeeded'], ['umbrella', 'failed'],
    ]);
    for (const name of ['acme', 'globex', 'initech'] as const) {
      // The vendor's windows are closed (docs/data.md "Partial days"): a session starting exactly at TO is stored too.
      expect(out.accounts.find((a) => a.account === name)!.summary!.sessions.written).toBe(fx.emu.accounts.find((a) => a.name === name)!.dataset.sessionsStartedIn(FROM, TO + 1).length);
    }
    expect(r.stderr.length).toBeLessThan(20_000);
    expect(await leaks(r, data, { ...KEYS, webhookToken: HOOK_TOKEN, oversizedKey: HUGE })).toEqual([]);
    // The failure was notified, and the notification holds no secret either.
    expect(hook.posts.length).toBeGreaterThan(0);
    const posted = hook.posts.map((p) => p.body).join('\n');
    for (const s of [...Object.values(KEYS), HOOK_TOKEN, HUGE.slice(100, 116)]) expect(posted).not.toContain(s);
  });

  it('many accounts: an apiKeyEnv variable holding more than 4 KiB fails that account alone', async () => {
    const root = await tempDir();
    const data = join(root, 'data');
    const config = join(root, 'config.json');
    await writeFile(config, JSON.stringify({
      dataDir: data, reportingUrl: fx.emu.url, notifyUrl: hook.url,
      accounts: { acme: { apiKeyEnv: 'ACME_KEY' }, globex: { apiKeyEnv: 'GLOBEX_KEY' }, initech: { apiKeyEnv: 'INITECH_KEY' } },
    }));
    const env = { ACME_KEY: KEYS.acme, GLOBEX_KEY: HUGE.slice(0, 30_000), INITECH_KEY: KEYS.initech };
    const r = await runCli(['backfill', '--config', config, '--from', isoDay(FROM), '--to', isoDay(TO), '--json', '--log-level', 'debug'], env);
    expect(r.code, r.stderr.slice(0, 2000)).toBe(1);
    expect(r.stderr).toContain('  globex: its key in environment variable GLOBEX_KEY (apiKeyEnv) is longer than 4 KiB (4,096 bytes)');
    const out = JSON.parse(r.stdout) as { accounts: Array<{ account: string; outcome: string }> };
    expect(out.accounts.map((a) => [a.account, a.outcome])).toEqual([['acme', 'succeeded'], ['globex', 'failed'], ['initech', 'succeeded']]);
    expect(await leaks(r, data, { acme: KEYS.acme, initech: KEYS.initech, webhookToken: HOOK_TOKEN, oversizedKey: HUGE.slice(0, 30_000) })).toEqual([]);
  });

  it('one account: REPORTING_API_KEY_FILE naming a huge file is refused (exit 2) without any of it or the webhook token shown', async () => {
    const root = await tempDir();
    const data = join(root, 'data');
    await writeFile(join(root, 'huge.key'), HUGE, { mode: 0o600 });
    const env = {
      REPORTING_URL: fx.emu.url, REPORTING_API_KEY_FILE: join(root, 'huge.key'), SESSION_ETL_DATA_DIR: data,
      SESSION_ETL_NOTIFY_URL: hook.url, OAUTH_CLIENT_SECRET: KEYS.globex,
    };
    for (const args of [['export', '--since', isoDay(FROM), '--log-level', 'debug'], ['status']]) {
      const r = await runCli(args, env);
      expect(r.code, `${args[0]}: ${r.stderr.slice(0, 2000)}`).toBe(2);
      expect(r.stderr).toContain(`REPORTING_API_KEY_FILE ${join(root, 'huge.key')} holds more than 4 KiB (4,096 bytes)`);
      expect(await leaks(r, data, { oversizedKey: HUGE, webhookToken: HOOK_TOKEN, clientSecret: KEYS.globex })).toEqual([]);
    }
    // `config` is the command that diagnoses a key file (issue 42 #9): it shows the configuration, marks the file, exits 0.
    const shown = await runCli(['config'], env);
    expect(shown.code, shown.stderr.slice(0, 2000)).toBe(0);
    expect(shown.stdout).toContain(`UNUSABLE: key file ${join(root, 'huge.key')} holds more than 4 KiB (4,096 bytes)`);
    expect(shown.stderr).toContain(
      `warning: key file ${join(root, 'huge.key')} holds more than 4 KiB (4,096 bytes), more than any key: is it the right file? (nothing of it is shown) (REPORTING_API_KEY_FILE): commands that fetch will refuse to start (exit 2)`,
    );
    expect(await leaks(shown, data, { oversizedKey: HUGE, webhookToken: HOOK_TOKEN, clientSecret: KEYS.globex })).toEqual([]);
    // The same key given in the variable itself.
    const r = await runCli(['export', '--since', isoDay(FROM)], { ...env, REPORTING_API_KEY_FILE: '', REPORTING_API_KEY: HUGE.slice(0, 10_000) });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('the API key (REPORTING_API_KEY) is longer than 4 KiB (4,096 bytes)');
    expect(await leaks(r, data, { oversizedKey: HUGE.slice(0, 10_000), webhookToken: HOOK_TOKEN })).toEqual([]);
  });
});
