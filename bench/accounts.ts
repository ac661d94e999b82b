/**
 * The many-accounts case (issue 18; docs/accounts.md): 200 accounts × 2,000 sessions on the
 * multi-account emulator, a quota of 10 requests/s per account, run by one `session-etl backfill`
 * process over all accounts (--account-concurrency, default 4), against the same 400,000 sessions
 * in one account (the single-account command, the same quota). Then the 200 accounts again with
 * one account's key revoked and one answering slowly: every other account must complete, within
 * 1.2× the time. `npm run bench -- --only accounts` runs only this case and rewrites only its table.
 */
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { emulatorAccounts } from '../src/emulator/accounts.js';
import { runMeasured, type Row } from './measured-process.js';

export type AccountsBenchRow = Row;

export interface AccountsBenchContext {
  /** dist/bench (emulator-process.js, rss-probe.js). */
  dist: string;
  bin: string;
  work: string;
  scale: number;
  row(r: AccountsBenchRow): void;
  log(s: string): void;
}

const D = 86_400;
const DAYS = 10;
const PER_ACCOUNT = 2_000;
const QUOTA = 10;

interface Run {
  wallMs: number;
  code: number;
  out: { accounts?: Array<{ account: string; outcome: string }>; total?: { sessionsWritten: number }; sessions?: { written: number } };
  maxRssBytes: number;
  /** CPU time of the process (user + system, every thread): steadier than the wall time on a shared machine. */
  cpuMs: number;
  /** The 1-minute load average when the run ended. */
  load: number;
  stderr: string;
}

export async function accountsBench(ctx: AccountsBenchContext): Promise<void> {
  const count = Math.max(4, Math.round(200 * ctx.scale));
  const total = count * PER_ACCOUNT;
  const today = Math.floor(Date.now() / 1000 / D) * D;
  const from = today - (DAYS + 1) * D;
  const to = from + DAYS * D;
  const iso = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);
  const accounts = emulatorAccounts(count, 7).map((a) => ({ ...a, sessionsPerDay: PER_ACCOUNT / DAYS, rateLimitRps: QUOTA }));
  const env: Record<string, string> = {};
  const config: Record<string, unknown> = {};
  for (const a of accounts) {
    const v = `${a.name.replace(/-/g, '_').toUpperCase()}_KEY`;
    env[v] = a.apiKey;
    config[a.name] = { apiKeyEnv: v };
  }
  ctx.log(`accounts: ${count} accounts × ${PER_ACCOUNT} sessions over ${DAYS} days, quota ${QUOTA}/s each, against ${total} sessions in one account`);

  // One account, the same sessions and quota: the command as it is used today.
  const single = await emulatorProcess(ctx.dist, { seed: 7, from, to: to + D, sessionsPerDay: total / DAYS, faults: { rateLimitRps: QUOTA } });
  let one: Run;
  try {
    one = await cli(ctx, ['backfill', '--from', iso(from), '--to', iso(to), '--data-dir', join(ctx.work, 'acc-single')], {
      REPORTING_URL: single.url,
      REPORTING_API_KEY: single.apiKey,
    });
  } finally {
    await single.close();
  }
  const oneWritten = one.out.sessions?.written ?? 0;
  const oneRate = oneWritten / (one.wallMs / 1000);

  const many = async (dir: string, list: typeof accounts, extra: string[] = []) => {
    const emu = await emulatorProcess(ctx.dist, { seed: 7, from, to: to + D, accounts: list });
    try {
      const file = join(ctx.work, `${dir}.json`);
      await writeFile(file, JSON.stringify({ dataDir: join(ctx.work, dir), reportingUrl: emu.url, accounts: config }));
      return await cli(ctx, ['backfill', '--config', file, '--from', iso(from), '--to', iso(to), ...extra], env);
    } finally {
      await emu.close();
    }
  };
  const all = await many('acc-many', accounts);
  if (all.code !== 0) throw new Error(`the many-accounts backfill exited ${all.code}: ${all.stderr.slice(-2000)}`);
  const allWritten = all.out.total?.sessionsWritten ?? 0;
  const allRate = allWritten / (all.wallMs / 1000);
  const ratio = allRate / oneRate;
  const section = `accounts: ${count} × ${PER_ACCOUNT / 1000}k`;
  ctx.row({ section, measure: `one account, ${fmtN(oneWritten)} sessions, quota ${QUOTA}/s`, value: `${fmtS(one.wallMs)} (${fmtN(oneRate)} sessions/s), ${cpuS(one)}, peak RSS ${mb(one.maxRssBytes)}` });
  ctx.row({
    section,
    measure: `${count} accounts, ${fmtN(allWritten)} sessions, quota ${QUOTA}/s each, --account-concurrency 4: throughput vs one account`,
    value: `${fmtS(all.wallMs)} (${fmtN(allRate)} sessions/s) = ${ratio.toFixed(2)}×; ${cpuS(all)} (${Math.round(all.cpuMs / count)} CPU-ms an account)`,
    goal: '≥ 0.8×',
    met: ratio >= 0.8,
  });
  ctx.row({ section, measure: `${count} accounts: peak RSS of the process`, value: mb(all.maxRssBytes), goal: '≤ 400 MB', met: all.maxRssBytes <= 400 * 2 ** 20 });
  // The dataset as BI tools read it: every account at once, and one account's days, against the
  // same queries over the one-account dataset of the same sessions (median of warm runs).
  const bi = await biQueries(join(ctx.work, 'acc-single'), join(ctx.work, 'acc-many'), accounts[0]!.name);
  ctx.row({
    section,
    measure: 'BI query over every account (sessions and mean duration per account) vs the same over the one-account dataset',
    value: `${bi.all.many.toFixed(1)} ms against ${bi.all.one.toFixed(1)} ms = ${(bi.all.many / bi.all.one).toFixed(2)}×`,
    goal: '≤ 2×',
    met: bi.all.many / bi.all.one <= 2,
  });
  ctx.row({
    section,
    measure: `one account's ${DAYS} days (all the data) vs the same days of the one-account dataset`,
    value: `${bi.oneAccount.many.toFixed(1)} ms against ${bi.oneAccount.one.toFixed(1)} ms = ${(bi.oneAccount.many / bi.oneAccount.one).toFixed(2)}×`,
    goal: '≤ 2×',
    met: bi.oneAccount.many / bi.oneAccount.one <= 2,
  });
  // The same with format parquet (the store holds the state only, the rows wait for their day's file).
  const pq = await many('acc-many-parquet', accounts, ['--format', 'parquet']);
  const pqRate = (pq.out.total?.sessionsWritten ?? 0) / (pq.wallMs / 1000);
  ctx.row({
    section,
    measure: `${count} accounts, --format parquet: throughput vs one account (format both)`,
    value: `${fmtS(pq.wallMs)} (${fmtN(pqRate)} sessions/s) = ${(pqRate / oneRate).toFixed(2)}×, ${cpuS(pq)}, peak RSS ${mb(pq.maxRssBytes)}${pq.code ? `, exit ${pq.code}` : ''}`,
  });

  // One key revoked, one account answering slowly (3 s per request): the others complete, in about the same time.
  const faulty = accounts.map((a, i) => (i === 0 ? { ...a, revoked: true } : i === 1 ? { ...a, latencyMs: 3_000 } : a));
  const bad = await many('acc-faulty', faulty);
  const outcomes = bad.out.accounts ?? [];
  const others = outcomes.filter((o) => o.account !== accounts[0]!.name);
  const othersOk = others.length === count - 1 && others.every((o) => o.outcome === 'succeeded');
  const failedOne = outcomes.find((o) => o.account === accounts[0]!.name)?.outcome === 'failed' && bad.code === 1;
  const slowdown = bad.wallMs / all.wallMs;
  ctx.row({
    section,
    measure: `one key revoked, one account slow (3 s per answer): every other account complete, the revoked one failed (exit 1)`,
    value: `${others.filter((o) => o.outcome === 'succeeded').length} of ${count - 1} complete; revoked: ${failedOne ? 'failed, exit 1' : `exit ${bad.code}`}`,
    goal: `${count - 1} of ${count - 1}`,
    met: othersOk && failedOne,
  });
  ctx.row({ section, measure: 'with those faults: time vs without', value: `${fmtS(bad.wallMs)} = ${slowdown.toFixed(2)}×, ${cpuS(bad)}`, goal: '≤ 1.2×', met: slowdown <= 1.2 });
}

async function cli(ctx: AccountsBenchContext, args: string[], env: Record<string, string>): Promise<Run> {
  const r = await runMeasured(ctx.dist, ctx.bin, [...args, '--json', '--log-level', 'error', '--no-progress'], { PATH: process.env.PATH, HOME: process.env.HOME, ...env });
  let out: Run['out'] = {};
  try {
    out = JSON.parse(r.stdout) as Run['out'];
  } catch {
    throw new Error(`session-etl ${args.join(' ')} exited ${r.code} without a JSON summary: ${r.stderr.slice(-2000)}`);
  }
  return { wallMs: r.wallMs, code: r.code, out, maxRssBytes: r.maxRssBytes, cpuMs: r.cpuMs, load: loadavg()[0]!, stderr: r.stderr };
}

async function emulatorProcess(dist: string, options: Record<string, unknown>): Promise<{ url: string; apiKey: string; close(): Promise<void> }> {
  const child = spawn(process.execPath, [join(dist, 'emulator-process.js'), JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const first = await new Promise<string>((res) => lines.once('line', res));
  const { url, apiKey } = JSON.parse(first) as { url: string; apiKey: string };
  return {
    url,
    apiKey,
    close: () =>
      new Promise<void>((res) => {
        child.once('exit', () => res());
        child.stdin!.end();
      }),
  };
}

/**
 * The BI queries, each run warm 7 times in one in-memory DuckDB (the median): every account's
 * sessions and mean duration, grouped by account, over the many-account dataset, against the same
 * over the one-account dataset; one account's days against the same days of the one-account dataset.
 */
async function biQueries(singleDir: string, manyDir: string, account: string): Promise<{ all: { many: number; one: number }; oneAccount: { many: number; one: number } }> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const inst = await DuckDBInstance.create(':memory:');
  const conn = await inst.connect();
  const glob = (dir: string) => `read_parquet('${join(dir, 'parquet', 'sessions', '*', '*.parquet').replace(/'/g, "''")}', hive_partitioning = true)`;
  const time = async (sql: string): Promise<number> => {
    const runs: number[] = [];
    for (let i = 0; i < 8; i++) {
      const t0 = performance.now();
      await conn.runAndReadAll(sql);
      if (i > 0) runs.push(performance.now() - t0);
    }
    return runs.sort((a, b) => a - b)[Math.floor(runs.length / 2)]!;
  };
  try {
    const all = {
      many: await time(`SELECT account, count(*), avg(duration_seconds) FROM ${glob(manyDir)} GROUP BY 1`),
      one: await time(`SELECT 'one' AS account, count(*), avg(duration_seconds) FROM ${glob(singleDir)} GROUP BY 1`),
    };
    const days = `"date" >= DATE '2000-01-01'`;
    const oneAccount = {
      many: await time(`SELECT "date", count(*), avg(duration_seconds) FROM ${glob(manyDir)} WHERE account = '${account}' AND ${days} GROUP BY 1`),
      one: await time(`SELECT "date", count(*), avg(duration_seconds) FROM ${glob(singleDir)} WHERE ${days} GROUP BY 1`),
    };
    return { all, oneAccount };
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
}

const fmtN = (n: number) => Math.round(n).toLocaleString('en-US');
const fmtS = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const cpuS = (r: Run) => `${(r.cpuMs / 1000).toFixed(1)} CPU-s, load ${r.load.toFixed(1)}`;
const mb = (b: number) => `${Math.round(b / 2 ** 20)} MB`;

/** The many-accounts table between its own markers of docs/benchmarks.md; the other sections stay as they were measured. */
export async function writeAccountsDoc(doc: string, table: string, where: string): Promise<void> {
  const start = '<!-- bench-accounts:start (written by `npm run bench` and `npm run bench -- --only accounts`; do not edit by hand) -->';
  const end = '<!-- bench-accounts:end -->';
  const block = [start, `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${where}.`, '', table, end].join('\n');
  let text = await readFile(doc, 'utf8');
  const a = text.indexOf('<!-- bench-accounts:start');
  const b = text.indexOf(end);
  text = a >= 0 && b > a ? text.slice(0, a) + block + text.slice(b + end.length) : `${text}\n${block}\n`;
  await writeFile(doc, text);
}
