import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { holdsStore } from '../../store/layout.js';
import { DEMO_MARKER } from './demo.js';
import { loadConfig } from '../../config/load.js';
import { humanDuration } from '../../time/human-duration.js';
import { partialDays } from '../../time/partial-days.js';
import { UsageError } from '../usage-error.js';
import type { StoreStatus } from '../../store/status.js';
import { addAccountSelection, chosenAccounts, type AccountFlags } from '../account-options.js';
import { oneLine } from '../../util/terminal-text.js';
import { addVolumeOptions, volumeConfigFlags, volumeRuleOf, type VolumeFlags } from '../volume-options.js';
import { describeVerification } from '../verify-report.js';
import { suggestedCommand } from '../../util/suggested-command.js';

export function register(program: Command): void {
  addVolumeOptions(addAccountSelection(program
    .command('status')
    .description('Checkpoint and lag, coverage holes, last runs, rows, partitions and size (read-only)')
    .option('--data-dir <dir>', 'data directory; also SESSION_ETL_DATA_DIR (default ./data)')
    .option('--config <file>', 'configuration file')
    .option('--parquet-url <s3-url>', 'the dataset (and, format parquet, the state) in a bucket: s3://BUCKET/PREFIX; also SESSION_ETL_PARQUET_URL')
    .option('--runs <n>', 'how many recent runs to show', '10')
    .option('--json', 'print as JSON')
    .option('--check', 'health check: exit 0 when healthy, 1 with one line per problem (failed last run, lag beyond --max-lag, holes)')
    .option('--max-lag <duration>', 'with --check: the checkpoint may be this far behind now (default 26h)')))
    .action(async (flags: AccountFlags & VolumeFlags & { dataDir?: string; config?: string; parquetUrl?: string; runs: string; json?: boolean; check?: boolean; maxLag?: string }) => {
      if (!/^\d+$/.test(flags.runs.trim()) || Number(flags.runs) < 1) {
        throw new UsageError(`--runs must be a positive whole number, got ${JSON.stringify(flags.runs)}`);
      }
      const loaded = loadConfig({ ...(flags.config ? { configFile: flags.config } : {}), flags: { dataDir: flags.dataDir, parquetUrl: flags.parquetUrl, ...volumeConfigFlags(flags) } });
      const { config } = loaded;
      const { datasetOf } = await import('../../pipeline/run.js');
      const { dataset } = datasetOf({ ...(config.parquetUrl ? { parquetUrl: config.parquetUrl } : {}), s3PathStyle: config.s3PathStyle });
      const volume = volumeRuleOf(config);
      const configured = chosenAccounts(loaded, flags);
      // No accounts map: a data directory of many accounts is read as the accounts its store holds.
      const { heldAccounts } = await import('../../accounts/stores.js');
      const held = configured ? null : await heldAccounts(config.dataDir, dataset);
      if (held && !flags.json && !flags.check) {
        process.stdout.write(`${config.dataDir} holds many accounts; without an accounts map (--config), the ${held.length} its store holds:\n`);
      }
      const accounts = configured ?? held;
      if (accounts) {
        const { accountsStatus } = await import('../accounts-status.js');
        process.exitCode = await accountsStatus(config.dataDir, accounts, { ...flags, runs: Number(flags.runs), maxLag: flags.maxLag ?? config.maxLag, settle: config.settle }, formatStatus, dataset, volume);
        return;
      }
      // With the dataset and state in a bucket the local directory is only a cache: it may not exist.
      if (!config.parquetUrl) refuseMissingDataDir(config.dataDir, loaded.sources.dataDir === 'default');
      if (flags.check || flags.maxLag !== undefined) {
        const { statusCheck } = await import('../status-check.js');
        // --max-lag, else the configuration's maxLag (the same limit notifications use).
        process.exitCode = await statusCheck(config.dataDir, { ...flags, maxLag: flags.maxLag ?? config.maxLag }, config.settle, dataset, volume);
        return;
      }
      const { readStatus } = await import('../../store/status.js');
      const s = await readStatus(config.dataDir, Date.now(), Number(flags.runs), undefined, dataset, volume);
      process.stdout.write(flags.json ? JSON.stringify({ ...s, partialDays: partialDays(s.coverage) }) + '\n' : formatStatus(s));
    });
}

const DEMO_DIR = join('data', 'demo');

/** A missing data directory is a typo (exit 2, for --check too); an empty default ./data beside data/demo points to the demo. */
function refuseMissingDataDir(dir: string, isDefault: boolean): void {
  if (!existsSync(dir)) throw new UsageError(`no such directory: ${dir} (the data directory): check --data-dir or SESSION_ETL_DATA_DIR`);
  if (isDefault && !holdsStore(dir) && existsSync(join(DEMO_DIR, DEMO_MARKER))) {
    throw new UsageError(`nothing exported in ${dir}; the demo wrote ${DEMO_DIR}: ${suggestedCommand('status', [], { dataDir: DEMO_DIR })}`);
  }
}

function describePartialDays(coverage: StoreStatus['coverage']): string {
  const days = partialDays(coverage);
  if (!days.length) return 'none';
  const shown = days.slice(0, 8).map((d) => `${d.date} (covered ${d.covered.join(', ')})`);
  return shown.join(', ') + (days.length > shown.length ? `, and ${days.length - shown.length} more` : '');
}

function describeBackfills(b: StoreStatus['unfinishedBackfills']): string {
  if (b === null) return '(not known while a run holds the DuckDB file)';
  if (!b.length) return 'none unfinished';
  return b
    .map((x) => `${x.from} – ${x.to} unfinished (run ${x.runId}): ${x.missing.map((m) => `${m.from} – ${m.to}`).join(', ')} not loaded; resume: ${x.resume}`)
    .join('\n                ');
}

function describeAnomalies(s: StoreStatus): string {
  if (!s.volumeAnomalies.length) return 'no anomalies';
  const days = s.volumeAnomalies.map((a) => `${a.date} (${a.sessions} sessions, expected about ${a.expected})`);
  return `${days.length} anomal${days.length === 1 ? 'y' : 'ies'}: ${days.join(', ')}; compare each with the source: ${suggestedCommand('verify', ['--from', 'DAY', '--to', 'NEXT-DAY'], { dataDir: s.dataDir })}`;
}

function human(bytes: number): string {
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = bytes;
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i ? 1 : 0)} ${u[i]}`;
}

/** A run's sessions read again as stored: counted apart since issue 42, earlier in sessions_written. */
function unchangedOf(r: Record<string, unknown>): number | undefined {
  if (r.sessions_unchanged != null) return Number(r.sessions_unchanged);
  if (r.sessions_new == null || r.sessions_updated == null || r.sessions_written == null) return undefined;
  return Number(r.sessions_written) - Number(r.sessions_new) - Number(r.sessions_updated);
}

/** A run's sessions: new, updated and unchanged; for a run that died, what the store holds of it. */
function sessionsOf(r: Record<string, unknown>): string {
  const n = r.sessions_written == null ? 'unknown' : String(r.sessions_written);
  if (r.outcome === 'died' && r.sessions_new == null) {
    return `committed before it stopped: ${r.windows ?? 'unknown'} windows, ${n} sessions, ${r.partitions_written ?? 'unknown'} days (new and updated not known)`;
  }
  const unchanged = unchangedOf(r);
  const all = r.sessions_unchanged != null && r.sessions_written != null ? String(Number(r.sessions_written) + Number(r.sessions_unchanged)) : n;
  return `${all} sessions (${r.sessions_new ?? '?'} new, ${r.sessions_updated ?? '?'} updated, ${unchanged ?? '?'} unchanged)`;
}

/** A many-account store's figures are the whole store's, not the account's. */
function shared(s: StoreStatus): string {
  return s.storeAccounts !== null ? `  — the whole store's, shared by its ${s.storeAccounts} account${s.storeAccounts === 1 ? '' : 's'}` : '';
}

export function formatStatus(s: StoreStatus): string {
  const lines = [
    ...(s.source === 'snapshot' ? [`a run is going: figures as of ${s.asOf} (its state snapshot, state.json; the DuckDB file is held by the run)`] : []),
    `data directory  ${s.dataDir} (format ${s.format})`,
    ...(s.olderSchema !== null ? [`schema          written by an earlier release (schema ${s.olderSchema}): read as it is; the next export or backfill upgrades it`] : []),
    `checkpoint      ${s.checkpoint ?? '(none yet)'}${s.lagSeconds !== null ? `  — ${humanDuration(s.lagSeconds)} behind now` : ''}`,
    `coverage        ${s.coverage.map((c) => `${c.from} – ${c.to}`).join(', ') || '(none)'}`,
    `coverage holes  ${s.coverageHoles.map((c) => `${c.from} – ${c.to}`).join(', ') || 'none'}`,
    `partial days    ${describePartialDays(s.coverage)}`,
    `volume          ${describeAnomalies(s)}`,
    `last verified   ${describeVerification(s.lastVerification)}`,
    `rows            ${s.rows ?? '(parquet only: see the dataset)'}${s.pendingRows ? ` (+${s.pendingRows} committed, merged by the next run)` : ''}${s.rejected ? `, ${s.rejected} rejected` : ''}`,
    `partitions      ${s.partitions}${s.pendingPartitions.length ? ` (${s.pendingPartitions.length} waiting for a rewrite)` : ''}${shared(s)}`,
    `size            ${human(s.bytes.total)} (DuckDB ${human(s.bytes.duckdb)}, Parquet ${human(s.bytes.parquet)})${shared(s)}`,
    `backfills       ${describeBackfills(s.unfinishedBackfills)}`,
    `running now     ${
      s.runningNow
        ? `pid ${s.runningNow.pid} on ${oneLine(String(s.runningNow.host))}: ${oneLine(String(s.runningNow.command))}, since ${s.runningNow.startedAt}` +
          (s.progress ? `; ${s.progress.windowsDone} of ${s.progress.windowsTotal} windows done, ${s.progress.sessions} records fetched (as of ${s.progress.at})` : '')
        : s.lastRunDied
          ? `no: last run ${s.lastRunDied.runId ?? '(unnamed)'} died (pid ${s.lastRunDied.pid} gone); the next run takes over and resumes its work`
          : 'no'
    }`,
    '',
    'last runs:',
  ];
  for (const r of s.lastRuns) {
    lines.push(
      `  ${r.started_at}  ${String(r.kind).padEnd(8)} ${String(r.outcome).padEnd(13)} ${sessionsOf(r)}, ${r.retries} retries, ${r.rate_limited} 429s${r.paused_ms ? ` (paused ${(Number(r.paused_ms) / 1000).toFixed(1)} s${r.pace != null ? `, pace ${Number(r.pace).toFixed(2)}/s` : ''})` : ''}, ${r.bisections} bisections` +
        // The error quotes the server: one printable line, whatever it sent (escape sequences, line breaks).
        (r.error ? `\n      error: ${oneLine(String(r.error))}` : ''),
    );
  }
  if (!s.lastRuns.length) lines.push('  (none)');
  return lines.join('\n') + '\n';
}
