/**
 * Secrets: every command runs with a distinctive API key (and a distinctive OAuth client secret),
 * including runs that fail on the way — a wrong key, an unreachable endpoint, and a hostile server
 * that echoes the Authorization header back in a 400 body, a 500 body and a GraphQL error message.
 * Then every byte the runs wrote is searched (stdout, stderr, logs, DuckDB files, Parquet files,
 * state, run history, pending files, the lock, the token file): the key appears nowhere, in plain
 * text, base64, URL-encoded, UTF-16, hex, HTML entities or cut short. The OAuth tokens appear only in the token file, which is mode 0600
 * in a 0700 directory.
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startEmulator } from '../../src/emulator/index.js';
import { interfaceEmulatorEnv } from '../../src/emulator/interface/index.js';
import { startCorruptingProxy } from './corrupting-proxy.js';
import {
  check, cliEnv, dayStart, DAY, excerpt, isoDay, newResult, sleep, startCli, TempDirs, timed, type CliRun, type ScenarioResult,
} from './harness.js';

/**
 * The ways a secret may be written out: whole (plain, JSON-escaped with `\/`, lower- and upper-cased,
 * base64, base64url, URL-encoded, UTF-16, hex, HTML entities) or cut short.
 */
function forms(secret: string): string[] {
  // The last 24 characters of every secret here are random hex: 12 of them in a row are a partial leak.
  const core = secret.slice(-24, -12);
  return [
    ...new Set([
      secret,
      secret.replaceAll('/', '\\/'),
      secret.toLowerCase(),
      secret.toUpperCase(),
      Buffer.from(secret).toString('base64'),
      Buffer.from(secret).toString('base64url'),
      encodeURIComponent(secret),
      Buffer.from(secret, 'utf16le').toString('latin1'),
      ...hexAndEntities(secret),
      core,
      core.toUpperCase(),
    ]),
  ];
}

/**
 * Hex (one run, lower and upper case, and as `\xNN` escapes) and HTML numeric entities (every
 * character, or only the punctuation, in decimal and in hex): issue 38 found redaction blind to them.
 */
function hexAndEntities(secret: string): string[] {
  const hex = Buffer.from(secret).toString('hex');
  const chars = [...secret];
  const code = (c: string) => c.codePointAt(0)!;
  const punct = (e: (c: string) => string) => chars.map((c) => (/[A-Za-z0-9]/.test(c) ? c : e(c))).join('');
  return [
    hex,
    hex.toUpperCase(),
    hex.replace(/../g, '\\x$&'),
    chars.map((c) => `&#${code(c)};`).join(''),
    chars.map((c) => `&#x${code(c).toString(16)};`).join(''),
    chars.map((c) => `&#x${code(c).toString(16).toUpperCase()};`).join(''),
    punct((c) => `&#${code(c)};`),
    punct((c) => `&#x${code(c).toString(16)};`),
  ];
}

/** What a hostile server may echo of a header: the value as is and in the forms redaction must know. */
function echoForms(value: string): string {
  return [
    value, value.toLowerCase(), value.toUpperCase(), Buffer.from(value).toString('base64'), Buffer.from(`id:${value}`).toString('base64'),
    ...hexAndEntities(value),
  ].join(' | ');
}

/** Every regular file under `root` (links not followed): what a leak could be written to. */
export async function filesUnder(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const n of await readdir(d).catch(() => [] as string[])) {
      const p = join(d, n);
      const st = await lstat(p);
      if (st.isDirectory()) await walk(p);
      else if (st.isFile()) out.push(p);
    }
  };
  await walk(root);
  return out;
}

export async function runSecrets(o: { seed: number; log?: (line: string) => void }): Promise<ScenarioResult> {
  const log = o.log ?? (() => {});
  const r = newResult('5. secrets', 'every command with a distinctive API key and client secret; every byte written searched');
  // A '/' in the key: JSON may escape it as '\/'.
  const apiKey = `rk/RELIABILITY-${randomBytes(12).toString('hex')}`;
  const wrongKey = `rk-WRONG-${randomBytes(12).toString('hex')}`;
  const clientSecret = `cs-RELIABILITY-${randomBytes(12).toString('hex')}`;
  const iface = { clientSecret };
  const nowS = Math.floor(Date.now() / 1000);
  const from = dayStart(6, nowS);
  const emu = await startEmulator({ seed: o.seed % 1000, from: from - DAY, to: nowS, now: nowS, sessionsPerDay: 60, apiKey, interface: iface });
  const temp = new TempDirs();
  const outputs: Array<{ what: string; run: CliRun }> = [];
  await timed(r, async () => {
    const root = await temp.make('secrets-');
    const dataDir = join(root, 'data');
    const tokenFile = join(root, 'config', 'session-etl', 'tokens.json');
    const cwd = join(root, 'cwd');
    await mkdir(cwd);
    const env = (extra: Record<string, string> = {}) => ({
      ...cliEnv(emu, dataDir),
      ...interfaceEmulatorEnv(emu.url, iface),
      SESSION_ETL_TOKEN_FILE: tokenFile,
      ...extra,
    });
    const run = async (what: string, args: string[], extra: Record<string, string> = {}, expect?: number) => {
      const res = await startCli(args, env(extra), cwd).result;
      outputs.push({ what, run: res });
      r.trials++;
      if (expect !== undefined) check(r, res.code === expect, `${what}: expected exit ${expect}, got ${excerpt(res)}`);
      return res;
    };
    const range = ['--from', isoDay(from), '--to', isoDay(from + 3 * DAY), '--chunk', '1d'];
    await run('backfill --json', ['backfill', ...range, '--json'], {}, 0);
    await run('backfill, debug logs', ['backfill', ...range, '--log-level', 'debug'], {}, 0);
    await run('export --since', ['export', '--since', isoDay(from + 2 * DAY), '--log-level', 'debug'], {}, 0);
    const keyFile = join(root, 'key');
    await writeFile(keyFile, `${apiKey}\n`, { mode: 0o600 });
    await run('export with REPORTING_API_KEY_FILE', ['export', '--log-level', 'trace'], { REPORTING_API_KEY: '', REPORTING_API_KEY_FILE: keyFile }, 0);
    await run('backfill, quarantine', ['backfill', ...range, '--on-invalid', 'quarantine', '--json'], {}, 0);
    await run('status', ['status'], {}, 0);
    await run('status --json', ['status', '--json'], {}, 0);
    await run('config', ['config'], {}, 0);
    await run('config --json', ['config', '--json'], {}, 0);
    await run('a wrong API key', ['backfill', ...range, '--log-level', 'debug'], { REPORTING_API_KEY: wrongKey }, 1);
    // Never answered in the run: a wrong address, refused at once with exit 2 (README, "exit codes").
    await run('an unreachable endpoint', ['backfill', ...range, '--max-attempts', '2'], { REPORTING_URL: 'http://127.0.0.1:9/' }, 2);
    // A hostile endpoint that echoes the request's Authorization header back.
    for (const mode of ['400 body', '500 body', 'GraphQL error message', 'record field', 'GraphQL error in other forms', 'record field in other forms'] as const) {
      const other = mode.endsWith('in other forms');
      const proxy = await startCorruptingProxy(emu.url, {
        respond: (req) => {
          const auth = other ? echoForms(String(req.headers.authorization ?? '')) : String(req.headers.authorization ?? '');
          if (mode === 'GraphQL error in other forms') {
            // JSON.stringify of a body that itself escapes '/' as '\/' (as PHP's json_encode does).
            return { status: 200, body: JSON.stringify({ errors: [{ message: `not allowed for key ${auth}`, extensions: { key: auth } }], data: null }).replaceAll('/', '\\/') };
          }
          if (mode === 'record field in other forms') return undefined;
          if (mode === 'record field') return undefined;
          if (mode === '400 body') return { status: 400, body: JSON.stringify({ message: `bad request, you sent Authorization: ${auth}` }) };
          if (mode === '500 body') return { status: 500, body: `<html>proxy error for ${auth}</html>` };
          return { status: 200, body: JSON.stringify({ errors: [{ message: `not allowed for key ${auth}` }], data: null }) };
        },
        // The echoed key inside a record: an invalid one, so it travels into rejected_sessions' reason.
        rewrite: (records, req) =>
          (mode === 'record field' || mode === 'record field in other forms') && records.length
            ? [{ ...records[0]!, started: `key ${other ? echoForms(String(req.headers.authorization)) : String(req.headers.authorization)}` }, ...records.slice(1)]
            : undefined,
      });
      try {
        await run(`an endpoint echoing the key in a ${mode}`, ['backfill', ...range, '--max-attempts', '2', '--min-chunk', '12h', '--log-level', 'debug'], { REPORTING_URL: proxy.url }, 1);
        if (mode === 'record field' || mode === 'record field in other forms') {
          await run(`the echoed key in a quarantined record (${mode})`, ['backfill', ...range, '--on-invalid', 'quarantine'], { REPORTING_URL: proxy.url }, 0);
        }
      } finally {
        await proxy.close();
      }
    }
    // The run history now holds the hostile runs' errors: status shows them.
    await run('status --json after the hostile runs', ['status', '--json'], {}, 0);
    // Issue 28: a key file far larger than any key (a wrong file, 100 KB) among many accounts made every
    // redaction throw an error quoting every secret of the process. It fails its own account only; the
    // same file as the one key is refused (exit 2); a key pasted where a variable name belongs is
    // refused (exit 2) without being shown. Their keys, the webhook's token and the files' contents
    // are searched for with the rest.
    const accountKeys = { north: `rk/NORTH-${randomBytes(12).toString('hex')}`, south: `rk/SOUTH-${randomBytes(12).toString('hex')}` };
    const hookToken = `hook-RELIABILITY-${randomBytes(12).toString('hex')}`;
    const hookUrl = `http://127.0.0.1:9/services/T0/B0/${hookToken}`;
    const hugeKey = randomBytes(75_000).toString('base64');
    const pastedKey = `sk_live_4eC39HqLyjWD${randomBytes(12).toString('hex')}`;
    const accountsRoot = join(root, 'many-accounts');
    await mkdir(accountsRoot);
    const hugeFile = join(accountsRoot, 'wrong-file.key');
    await writeFile(hugeFile, hugeKey, { mode: 0o600 });
    const accountsConfig = join(accountsRoot, 'config.json');
    const pastedConfig = join(accountsRoot, 'pasted.json');
    const userFiles = new Set([keyFile, hugeFile, accountsConfig, pastedConfig]);
    const accEmu = await startEmulator({
      seed: (o.seed + 1) % 1000, from: from - DAY, to: nowS, now: nowS, sessionsPerDay: 20,
      accounts: Object.entries(accountKeys).map(([name, key]) => ({ name, apiKey: key })),
    });
    try {
      // Without the endpoint, single key and data directory of the other runs (the configuration's are used).
      const accountsEnv = { REPORTING_URL: '', REPORTING_API_KEY: '', SESSION_ETL_DATA_DIR: '', NORTH_KEY: accountKeys.north, SOUTH_KEY: accountKeys.south };
      await writeFile(accountsConfig, JSON.stringify({
        dataDir: join(accountsRoot, 'data'), reportingUrl: accEmu.url, notifyUrl: hookUrl,
        accounts: { north: { apiKeyEnv: 'NORTH_KEY' }, south: { apiKeyEnv: 'SOUTH_KEY' }, wrongfile: { apiKeyFile: hugeFile } },
      }));
      const many = await run('many accounts, one apiKeyFile of 100 KB', ['backfill', '--config', accountsConfig, ...range, '--json', '--log-level', 'debug'], accountsEnv, 1);
      try {
        const outcomes = (JSON.parse(many.stdout) as { accounts: Array<{ account: string; outcome: string }> }).accounts.map((a) => `${a.account} ${a.outcome}`);
        check(r, outcomes.join(', ') === 'north succeeded, south succeeded, wrongfile failed', `many accounts, one oversized key: outcomes ${outcomes.join(', ')}`);
      } catch {
        check(r, false, `many accounts, one oversized key: no JSON summary on stdout: ${excerpt(many)}`);
      }
      check(r, /1 of 3 accounts failed: wrongfile/.test(many.stderr), `many accounts, one oversized key: the failure does not name it: ${excerpt(many)}`);
      const single = await run('REPORTING_API_KEY_FILE naming a 100 KB file', ['export', '--log-level', 'debug'], { REPORTING_API_KEY: '', REPORTING_API_KEY_FILE: hugeFile, SESSION_ETL_NOTIFY_URL: hookUrl }, 2);
      check(r, /REPORTING_API_KEY_FILE \S+ holds more than 4 KiB/.test(single.stderr), `REPORTING_API_KEY_FILE naming a 100 KB file: refused for another reason: ${excerpt(single)}`);
      await writeFile(pastedConfig, JSON.stringify({ dataDir: join(accountsRoot, 'data'), reportingUrl: accEmu.url, notifyUrl: hookUrl, accounts: { north: { apiKeyEnv: pastedKey } } }));
      for (const args of [['config'], ['accounts', 'list'], ['backfill', ...range]]) {
        const what = `a key pasted as apiKeyEnv: ${args[0]}${args[1] === 'list' ? ' list' : ''}`;
        const res = await run(what, [...args, '--config', pastedConfig], accountsEnv, 2);
        check(r, /accounts\.north\.apiKeyEnv .*looks like a key/.test(res.stderr), `${what}: refused for another reason: ${excerpt(res)}`);
      }
    } finally {
      await accEmu.close();
    }
    // The scheduler runs the export once (--run-now) and is stopped.
    const cfg = join(cwd, 'schedule.json');
    await writeFile(cfg, JSON.stringify({ startDate: isoDay(from) }));
    const sched = startCli(['schedule', '--cron', '0 0 1 1 *', '--run-now', '--config', cfg, '--log-level', 'debug'], env(), cwd);
    let schedErr = '';
    sched.stderr!.on('data', (d: Buffer) => (schedErr += d.toString()));
    const deadline = Date.now() + 30_000;
    while (!/job finished|job failed/.test(schedErr) && Date.now() < deadline && sched.exitCode === null) await sleep(50);
    sched.kill('SIGTERM');
    outputs.push({ what: 'schedule --run-now', run: await sched.result });
    r.trials++;
    // The interface commands: sign in (the suite plays the browser), use the tokens, sign out.
    const login = startCli(['auth', 'login', '--no-browser', '--timeout', '30'], env(), cwd);
    let browsed = false;
    login.stdout!.on('data', (d: Buffer) => {
      const url = d.toString().split('\n').find((l) => l.startsWith('http'));
      if (url && !browsed) {
        browsed = true;
        void fetch(url).catch(() => {});
      }
    });
    const loginRes = await login.result;
    outputs.push({ what: 'auth login', run: loginRes });
    r.trials++;
    check(r, loginRes.code === 0, `auth login: ${excerpt(loginRes)}`);
    let tokens: string[] = [];
    try {
      const st = await stat(tokenFile);
      const dirSt = await stat(join(root, 'config', 'session-etl'));
      check(r, (st.mode & 0o777) === 0o600, `the token file has mode ${(st.mode & 0o777).toString(8)}, not 600`);
      check(r, (dirSt.mode & 0o777) === 0o700, `the token directory has mode ${(dirSt.mode & 0o777).toString(8)}, not 700`);
      const stored = JSON.parse(await readFile(tokenFile, 'utf8')) as Record<string, unknown>;
      tokens = Object.entries(stored)
        .filter(([k, v]) => /token/i.test(k) && typeof v === 'string' && v.length >= 8)
        .map(([, v]) => v as string);
      const fileText = await readFile(tokenFile, 'utf8');
      check(r, !fileText.includes(apiKey) && !fileText.includes(clientSecret), 'the token file holds the API key or the client secret');
      r.notes.push(`token file mode ${(st.mode & 0o777).toString(8)}, its directory ${(dirSt.mode & 0o777).toString(8)}; ${tokens.length} tokens in it`);
    } catch (err) {
      check(r, false, `no token file after auth login: ${(err as Error).message}`);
    }
    await run('auth status', ['auth', 'status'], {}, 0);
    await run('auth status --json', ['auth', 'status', '--json'], {}, 0);
    await run('whoami --json', ['whoami', '--json'], {}, 0);
    const started = await run('session start --json', ['session', 'start', '--customer-name', 'Ciara', '--json'], {}, 0);
    const sid = /"sessionId"\s*:\s*"([0-9a-f-]{36})"/.exec(started.stdout)?.[1];
    if (sid) await run('session end', ['session', 'end', sid, '--show-wrapup'], {}, 0);
    // Search everything: outputs, then every file left anywhere under the root (the token file only for the key and secret).
    const haystacks: Array<{ where: string; bytes: Buffer; tokensAllowed: boolean }> = outputs.map((x) => ({
      where: `output of ${x.what}`,
      bytes: Buffer.from(x.run.stdout + x.run.stderr),
      tokensAllowed: false,
    }));
    await run('auth logout', ['auth', 'logout'], {}, 0);
    for (const f of await filesUnder(root)) {
      if (userFiles.has(f)) continue; // the files the user gave us the keys in
      haystacks.push({ where: f.slice(root.length + 1), bytes: await readFile(f), tokensAllowed: f === tokenFile });
    }
    haystacks.push(...outputs.slice(-1).map((x) => ({ where: `output of ${x.what}`, bytes: Buffer.from(x.run.stdout + x.run.stderr), tokensAllowed: false })));
    let bytes = 0;
    const secrets = [
      { name: 'the API key', value: apiKey, tokens: false, whole: false },
      { name: 'the wrong API key', value: wrongKey, tokens: false, whole: false },
      { name: 'the client secret', value: clientSecret, tokens: false, whole: false },
      { name: "account north's key", value: accountKeys.north, tokens: false, whole: false },
      { name: "account south's key", value: accountKeys.south, tokens: false, whole: false },
      { name: "the webhook URL's token", value: hookToken, tokens: false, whole: false },
      { name: 'the oversized key', value: hugeKey, tokens: false, whole: false },
      { name: 'the key pasted as apiKeyEnv', value: pastedKey, tokens: false, whole: false },
      ...tokens.map((t, i) => ({ name: `OAuth token #${i + 1}`, value: t, tokens: true, whole: true })),
    ];
    for (const h of haystacks) {
      bytes += h.bytes.length;
      const text = h.bytes.toString('latin1');
      for (const s of secrets) {
        if (s.tokens && h.tokensAllowed) continue;
        const hit = (s.whole ? [s.value] : forms(s.value)).find((f) => text.includes(f));
        check(r, !hit, `${s.name} appears in ${h.where}`);
      }
    }
    r.injected = secrets.length;
    r.notes.push(`${outputs.length} command runs; searched ${haystacks.length} outputs and files, ${(bytes / 1024 / 1024).toFixed(1)} MiB, for ${secrets.length} secrets (the keys, the secret and the webhook token also base64, URL-encoded, UTF-16, hex, HTML entities and cut short)`);
    log(`secrets: ${r.failures.length ? 'FAILED: ' + r.failures.slice(0, 3).join('; ') : 'ok'} (${haystacks.length} places searched)`);
  });
  await emu.close();
  await temp.cleanup();
  return r;
}
