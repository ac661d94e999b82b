/**
 * Issue 28 (LOW): values the configuration refuses without showing them. A key pasted where a
 * variable name or a path belongs was printed by `config`, `accounts list`, errors and
 * notifications; a file with `{"__proto__": {"apiKey": …}}` passed the "no key in the
 * configuration file" check. Both are refused with exit 2, naming the setting, never the value.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { looksLikeKey } from '../../src/config/looks-like-key.js';
import { exitCodeOf } from '../../src/index.js';
import { runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'session-etl-refused-'));
function file(obj: unknown): string {
  const p = join(dir, `c-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(p, typeof obj === 'string' ? obj : JSON.stringify(obj));
  return p;
}

/** Loads the configuration; returns the error's message and exit code (it must fail). */
function refusal(configFile: string, env: NodeJS.ProcessEnv = {}): { message: string; exit: number } {
  try {
    loadConfig({ configFile, env });
  } catch (err) {
    return { message: (err as Error).message, exit: exitCodeOf(err) };
  }
  throw new Error('the configuration was accepted');
}

// Shaped like real keys (Stripe, GitHub, a hex key): each a valid environment variable name or relative path today.
// The last is a key written in `_`-separated groups (issue 38), each group shorter than the 16 a run needs.
const PASTED = ['sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a', 'c86d081884c7d659a2feaa0c55ad015f', 'Kx9mP2qL_7vR4nT8_wZ3yB6sD'];

describe('a key pasted where a variable name or a path belongs', () => {
  it('looksLikeKey: keys yes; variable names, words, dates and paths no', () => {
    for (const k of [...PASTED, 'AIzaSyDaGmWKa4JsXZ-HjGw7ISLn', 'AbCdEfGhIjKlMnOpQrStUvWx']) expect(looksLikeKey(k), k).toBe(true);
    for (const n of ['ACME_REPORTING_KEY', 'REPORTING_API_KEY_2024', 'acme_key', 'MyCompanyReportingApiKeyFile', 'KEY_ACCOUNT_12345678',
      'backup20240101120000', 'acme.key', 'api-key', '123e4567-e89b-12d3-a456-426614174000.key',
      // Variable names in `_`-separated words, upper, lower and mixed case, with numbers.
      'ACME_PROD_REPORTING_API_KEY_2024', 'acme_prod_reporting_api_key_v2', 'Acme_Prod_Reporting_Key', 'SHARD_1_OF_4_REPORTING_KEY', 'backup_2024_01_01_12_00_00.key']) {
      expect(looksLikeKey(n), n).toBe(false);
    }
  });

  it.each(PASTED)('apiKeyEnv %s is refused naming the account and the setting, without the value', (key) => {
    const r = refusal(file({ accounts: { acme: { apiKeyEnv: key } } }));
    expect(r.exit).toBe(2);
    expect(r.message).toMatch(/accounts\.acme\.apiKeyEnv .*looks like a key, not the name of an environment variable/);
    expect(r.message).not.toContain(key);
  });

  it.each(PASTED)('apiKeyFile %s is refused the same way (an account, the file, and REPORTING_API_KEY_FILE)', (key) => {
    const a = refusal(file({ accounts: { acme: { apiKeyFile: key } } }));
    expect(a.message).toMatch(/accounts\.acme\.apiKeyFile .*looks like a key, not a file path/);
    const b = refusal(file({ apiKeyFile: `./keys/${key}` }));
    expect(b.message).toMatch(/apiKeyFile \(from file .*\): it looks like a key, not a file path/);
    const c = refusal(file({}), { REPORTING_API_KEY_FILE: key });
    expect(c.message).toMatch(/REPORTING_API_KEY_FILE \(from environment\): it looks like a key/);
    for (const r of [a, b, c]) {
      expect(r.exit).toBe(2);
      expect(r.message).not.toContain(key);
    }
  });

  it('a path with a line break or surrounding spaces (a pasted value) is refused; spaces inside a path are fine', () => {
    const r = refusal(file({ accounts: { acme: { apiKeyFile: 'ghp_short\n' } } }));
    expect(r.message).toMatch(/accounts\.acme\.apiKeyFile .*control characters/);
    expect(r.message).not.toContain('ghp_short');
    expect(refusal(file({ accounts: { acme: { apiKeyFile: ' /keys/acme.key' } } })).message).toMatch(/starts or ends with a space/);
    expect(refusal(file({ accounts: { acme: { apiKeyEnv: 'ACME-KEY' } } })).message).toMatch(/cannot be the name of an environment variable/);
    const ok = loadConfig({ configFile: file({ accounts: { acme: { apiKeyFile: '/home/me/My Keys/acme.key' }, b: { apiKeyEnv: 'B_REPORTING_KEY_2' } } }), env: {} });
    expect(Object.keys(ok.config.accounts ?? {})).toEqual(['acme', 'b']);
  });

  it('config, accounts list and backfill exit 2 naming the setting, and print none of the key', async () => {
    const key = PASTED[0]!;
    const cfg = file({ dataDir: join(dir, 'data'), accounts: { acme: { apiKeyEnv: key }, globex: { apiKeyEnv: 'GLOBEX_KEY' } } });
    for (const args of [['config'], ['accounts', 'list'], ['backfill', '--from', '2026-01-01', '--to', '2026-01-02']]) {
      const r = await runCli([...args, '--config', cfg], { GLOBEX_KEY: 'globex-key-123456' });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(/accounts\.acme\.apiKeyEnv/);
      expect(r.stdout + r.stderr, args.join(' ')).not.toContain(key);
    }
  });
});

describe('__proto__, constructor and prototype in the configuration file', () => {
  // Written as text: an object literal's __proto__ would set its prototype, and JSON.stringify drop it.
  it.each([
    ['at the top', '{"__proto__": {"apiKey": "proto-key-0123456789"}}', /"__proto__"/],
    ['in an account', '{"accounts": {"acme": {"apiKeyEnv": "ACME_KEY", "__proto__": {"apiKey": "proto-key-0123456789"}}}}', /"__proto__" \(in accounts\.acme\)/],
    ['constructor.prototype', '{"constructor": {"prototype": {"apiKey": "proto-key-0123456789"}}}', /"constructor"/],
  ])('%s: refused (exit 2), the value not shown', (_what, text, msg) => {
    const r = refusal(file(text));
    expect(r.exit).toBe(2);
    expect(r.message).toMatch(msg);
    expect(r.message).toMatch(/__proto__, constructor and prototype are refused/);
    expect(r.message).not.toContain('proto-key-0123456789');
  });

  it('through the CLI: export and config exit 2 and never use or print the key', async () => {
    const cfg = file(`{"dataDir": ${JSON.stringify(join(dir, 'data-proto'))}, "reportingUrl": "http://127.0.0.1:9/graphql", "__proto__": {"apiKey": "proto-key-0123456789"}}`);
    for (const args of [['config'], ['export', '--since', '2026-01-01']]) {
      const r = await runCli([...args, '--config', cfg]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/"__proto__"/);
      expect(r.stdout + r.stderr).not.toContain('proto-key-0123456789');
    }
  });
});
