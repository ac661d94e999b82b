import { readFileSync } from 'node:fs';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeConfig, loadConfig } from '../../src/config/load.js';
import { configReferenceMarkdown } from '../../src/config/reference.js';
import { ConfigError, DEFAULTS, exitCodeOf, parseDuration } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'session-etl-config-'));
function file(obj: unknown): string {
  const p = join(dir, `c-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(p, typeof obj === 'string' ? obj : JSON.stringify(obj));
  return p;
}

describe('configuration', () => {
  it('the configuration reference of docs/configuration.md is generated from the schema', () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(doc).toContain(configReferenceMarkdown());
  });

  it('defaults < file < env < flags, with sources', () => {
    const cfg = file({ concurrency: 2, dataDir: '/from/file', chunk: '6h' });
    const loaded = loadConfig({
      configFile: cfg,
      env: { SESSION_ETL_DATA_DIR: '/from/env', REPORTING_URL: 'http://x.test/', REPORTING_API_KEY: 'k-123456' },
      flags: { concurrency: 8 },
    });
    expect(loaded.config).toMatchObject({ concurrency: 8, dataDir: '/from/env', chunk: '6h', format: 'both', reportingUrl: 'http://x.test/' });
    expect(loaded.sources).toMatchObject({ concurrency: 'flag', dataDir: 'env', chunk: 'file', format: 'default' });
    const shown = describeConfig(loaded);
    expect(shown.find((r) => r.key === 'apiKey')!.value).toBe('[REDACTED]');
  });

  it.each([
    [{ concurrency: 0 }, /concurrency \(from file .*\): got the number 0; expected a number of at least 1/],
    [{ concurrency: -3 }, /concurrency/],
    [{ chunk: '1y' }, /chunk \(from file .*\): got "1y"; expected a duration/],
    [{ format: 'csv' }, /format/],
    [{ bogus: 1 }, /unknown configuration key\(s\) bogus/],
    [{ reportingUrl: 'ftp://x' }, /reportingUrl/],
    [{ startDate: '2026-02-30' }, /startDate/],
  ])('%j is refused naming the key', (obj, msg) => {
    expect(() => loadConfig({ configFile: file(obj), env: {} })).toThrow(msg);
  });

  it('refuses an API key inside a configuration file', () => {
    expect(() => loadConfig({ configFile: file({ apiKey: 'secret-in-file' }), env: {} })).toThrow(/keep the key out of files/);
  });

  it('reads apiKeyFile', () => {
    const keyFile = join(dir, 'key');
    writeFileSync(keyFile, 'key-from-file-99\n', { mode: 0o600 });
    expect(loadConfig({ configFile: file({ apiKeyFile: keyFile }), env: {} }).config.apiKey).toBe('key-from-file-99');
  });

  it('a file that is not JSON is a clear error', () => {
    expect(() => loadConfig({ configFile: file('{ nope'), env: {} })).toThrow(/is not valid JSON/);
    expect(() => loadConfig({ configFile: join(dir, 'missing.json'), env: {} })).toThrow(/cannot be read: no such file$/);
  });

  describe('messages a person acts on (issue 28)', () => {
    const messageOf = (load: () => unknown): string => {
      try {
        load();
      } catch (err) {
        return (err as Error).message;
      }
      return 'no error';
    };

    it('a missing file says "no such file", not ENOENT; an unreadable apiKeyFile too', () => {
      const m = messageOf(() => loadConfig({ configFile: join(dir, 'missing.json'), env: {} }));
      expect(m).toBe(`configuration file ${join(dir, 'missing.json')} cannot be read: no such file`);
      expect(messageOf(() => loadConfig({ configFile: file({ apiKeyFile: join(dir, 'no-such-key') }), env: {} }))).toBe(
        `apiKeyFile ${join(dir, 'no-such-key')} cannot be read: no such file`,
      );
    });

    it('bad JSON is placed by line and column', () => {
      const m = messageOf(() => loadConfig({ configFile: file('{\n  "settle": "10m",\n  "chunk": 1d\n}\n'), env: {} }));
      expect(m).toMatch(/is not valid JSON \(error at line 3, column 13\)/);
    });

    it('an unknown key gets a did-you-mean, at the top and in an account\'s entry', () => {
      expect(messageOf(() => loadConfig({ configFile: file({ startdate: '2026-01-01' }), env: {} }))).toContain(
        'unknown configuration key(s) startdate (did you mean startDate?)',
      );
      expect(messageOf(() => loadConfig({ configFile: file({ accounts: { acme: { apiKeyEnv: 'K', maxRequestPerSecond: 2 } } }), env: {} }))).toContain(
        'unknown configuration key(s) accounts.acme.maxRequestPerSecond (did you mean accounts.acme.maxRequestsPerSecond?)',
      );
    });

    it('a duration given as a number names the format; no key is named twice', () => {
      const m = messageOf(() => loadConfig({ configFile: file({ settle: 600 }), env: {} }));
      expect(m).toMatch(/settle \(from file .*\): expected a duration such as "90s", "15m", "6h", "1d" or "7d" \(a number with its unit, as text\), got the number 600$/);
      const flag = messageOf(() => loadConfig({ env: {}, flags: { chunk: '1x' } }));
      expect(flag).toContain('--chunk (from command line): got "1x"; expected a duration');
      expect(flag).not.toContain('chunk: chunk');
    });
  });

  describe('a refused value is named as the user wrote it, with what was given and what is expected (issues 38, 42)', () => {
    const messageOf = (load: () => unknown): string => {
      try {
        load();
      } catch (err) {
        return (err as Error).message;
      }
      return 'no error';
    };
    it.each([
      ['a file', () => loadConfig({ configFile: file({ settle: '10 minutes' }), env: {} }), /^  settle \(from file .*\.json\): got "10 minutes"; expected a duration such as "90s"/m],
      ['a flag named otherwise', () => loadConfig({ env: {}, flags: { scheduleCron: 'x y' } }), /^  --cron \(from command line\): got "x y"; expected a cron expression/m],
      ['a flag', () => loadConfig({ env: {}, flags: { maxLag: 'a day' } }), /^  --max-lag \(from command line\): got "a day"; expected a duration/m],
      ['the environment', () => loadConfig({ env: { SESSION_ETL_FORMAT: 'xml' } }), /^  SESSION_ETL_FORMAT \(from environment\): got "xml"; expected one of "duckdb", "parquet" or "both"$/m],
      ['a string for a number', () => loadConfig({ configFile: file({ concurrency: '4' }), env: {} }), /^  concurrency \(from file .*\): got "4"; expected a number$/m],
      ['an account\'s entry', () => loadConfig({ configFile: file({ accounts: { acme: { apiKeyEnv: 'K', chunk: '1q' } } }), env: {} }), /^  accounts\.acme\.chunk \(from file .*\): got "1q"; expected a duration/m],
      ['a time zone, with a did-you-mean', () => loadConfig({ env: {}, flags: { scheduleTimezone: 'Europe/Berln' } }), /^  --timezone \(from command line\): got "Europe\/Berln"; expected an IANA time zone .*\(did you mean Europe\/Berlin\?\)$/m],
    ])('%s', (_what, load, expected) => {
      const m = messageOf(load);
      expect(m).toMatch(expected);
      expect(m).not.toMatch(/Invalid input|Invalid option|Too small|scheduleCron|scheduleTimezone/);
    });

    it('a secret setting or a URL with a password is named, never echoed', () => {
      const m = messageOf(() => loadConfig({ env: { SESSION_ETL_NOTIFY_URL: 'not a url Zq9sEcReT' } }));
      expect(m).toMatch(/SESSION_ETL_NOTIFY_URL \(from environment\): /);
      expect(m).not.toContain('Zq9sEcReT');
      // A key pasted into the wrong variable is named, not shown.
      const swapped = messageOf(() => loadConfig({ env: { REPORTING_URL: 'sk_live_4eC39HqLyjWDarjtT1zdp7dc' } }));
      expect(swapped).toMatch(/REPORTING_URL \(from environment\): expected an http/);
      expect(swapped).not.toContain('4eC39HqLyjWDarjtT1zdp7dc');
    });
  });

  it('a key file given as the configuration file: the error shows none of its characters', () => {
    const keyFile = join(dir, 'key-as-config');
    writeFileSync(keyFile, 'rk-KEYFILEq8Zx0m3\n', { mode: 0o600 });
    let message = '';
    try {
      loadConfig({ configFile: keyFile, env: {} });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/is not valid JSON/);
    expect(message).not.toMatch(/rk-|KEYFILE/);
  });

  it('a REPORTING_URL without a scheme says what a valid one looks like', () => {
    expect(() => loadConfig({ env: { REPORTING_URL: 'reporting.example.com/graphql' } })).toThrow(
      /REPORTING_URL \(from environment\): got "reporting\.example\.com\/graphql"; expected an http:\/\/ or https:\/\/ URL such as https:\/\/reporting\.example\.com/,
    );
  });

  it('a URL with a password is refused without showing it, and the password is redacted everywhere', async () => {
    let message = '';
    try {
      loadConfig({ env: { REPORTING_URL: 'https://etl:Pa55-w0rd-Url@reporting.example.com/' } });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/REPORTING_URL \(from environment\): a URL holding a user name or password cannot be used/);
    expect(message).not.toContain('Pa55-w0rd-Url');
    const { redact } = await import('../../src/util/redact.js');
    expect(redact('the server echoed Pa55-w0rd-Url')).toBe('the server echoed [REDACTED]');
  });

  it('every configuration error is a ConfigError a library user can catch, asking for exit 2', () => {
    const bad = [
      () => loadConfig({ configFile: file({ concurrency: 0 }), env: {} }),
      () => loadConfig({ configFile: file({ apiKey: 'secret-in-file' }), env: {} }),
      () => loadConfig({ configFile: file('{ nope'), env: {} }),
      () => loadConfig({ configFile: join(dir, 'missing.json'), env: {} }),
      () => loadConfig({ configFile: file({ apiKeyFile: join(dir, 'no-such-key') }), env: {} }),
    ];
    for (const load of bad) {
      let caught: unknown;
      try {
        load();
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ConfigError);
      expect(exitCodeOf(caught)).toBe(2);
    }
  });

  it('a library run and a command-line run use the same defaults when nothing is set', () => {
    const { config, sources } = loadConfig({ env: {} });
    expect(sources).toMatchObject({ chunk: 'default', concurrency: 'default', minChunk: 'default', settle: 'default', lookback: 'default' });
    expect(DEFAULTS).toMatchObject({
      chunkSeconds: parseDuration(config.chunk),
      concurrency: config.concurrency,
      minChunkSeconds: parseDuration(config.minChunk),
      settleSeconds: parseDuration(config.settle),
      lookbackSeconds: parseDuration(config.lookback),
    });
    expect(DEFAULTS).toMatchObject({ chunkSeconds: 86_400, concurrency: 4, minChunkSeconds: 60, settleSeconds: 600, lookbackSeconds: 86_400 });
  });
});
