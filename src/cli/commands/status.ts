import { Command } from 'commander';
import { loadConfig } from '../../config/load.js';
import { partialDays } from '../partial-days.js';
import { UsageError } from '../usage-error.js';
import type { StoreStatus } from '../../store/status.js';
import { addAccountSelection, chosenAccounts, type AccountFlags } from '../account-options.js';
import { addVolumeOptions, volumeConfigFlags, volumeRuleOf, type VolumeFlags } from '../volume-options.js';
import { describeVerification } from '../verify-report.js';

export function register(program: Command): void {
  addVolumeOptions(addAccountSelection(program
    .command('status')
    .description('Checkpoint and lag, coverage holes, last runs, rows, partitions and size (read-only)')
    .option('--data-dir <dir>', 'data directory; also SESSION_ETL_DATA_DIR (default ./data)')
    .option('--config <file>', 'configuration file')
    .option('--runs <n>', 'how many recent runs to show', '10')
    .option('--json', 'print as JSON')
    .option('--check', 'health check: exit 0 when healthy, 1 with one line per problem (failed last run, lag beyond --max-lag, holes)')
    .option('--max-lag <duration>', 'with --check: the checkpoint may be this far behind now (default 26h)')))
    .action(async (flags: AccountFlags & VolumeFlags & { dataDir?: string; config?: string; runs: string; json?: boolean; check?: boolean; maxLag?: string }) => {
      if (!/^\d+$/.test(flags.runs.trim()) || Number(flags.runs) < 1) {
        throw new UsageError(`--runs must be a positive whole number, got ${JSON.stringify(flags.runs)}`);
      }
      const loaded = loadConfig({ ...(flags.config ? { configFile: flags.config } : {}), flags: { dataDir: flags.dataDir, ...volumeConfigFlags(flags) } });
      const { config } = loaded;
      const volume = volumeRuleOf(config);
      const accounts = chosenAccounts(loaded, flags);
      if (accounts) {
        const { accountsStatus } = await import('../accounts-status.js');
        process.exitCode = await accountsStatus(config.dataDir, accounts, { ...flags, runs: Number(flags.runs), maxLag: flags.maxLag ?? config.maxLag }, formatStatus, volume);
        return;
      }
      if (flags.check || flags.maxLag !== undefined) {
        const { statusCheck } = await import('../status-check.js');
        // --max-lag, else the configuration's maxLag (the same limit notifications use).
        process.exitCode = await statusCheck(config.dataDir, { ...flags, maxLag: flags.maxLag ?? config.maxLag }, volume);
        return;
      }
      const { readStatus } = await import('../../store/status.js');
      const s = await readStatus(config.dataDir, Date.now(), Number(flags.runs), undefined, volume);
      process.stdout.write(flags.json ? JSON.stringify({ ...s, partialDays: partialDays(s.coverage) }) + '\n' : formatStatus(s));
    });
}

/** UTC days (partitions) only partly covered, so incomplete in the data; see partial-days.ts. */
function describePartialDays(coverage: StoreStatus['coverage']): string {
  const days = partialDays(coverage);
  if (!days.length) return 'none';
  const shown = days.slice(0, 8).map((d) => `${d.date} (covered ${d.covered.join(', ')})`);
  return shown.join(', ') + (days.length > shown.length ? `, and ${days.length - shown.length} more` : '');
}

/** Volume anomalies (README "Volume anomalies"), each day with its count and what its weekday usually holds. */
function describeAnomalies(s: StoreStatus): string {
  if (!s.volumeAnomalies.length) return 'no anomalies';
  const days = s.volumeAnomalies.map((a) => `${a.date} (${a.sessions} sessions, expected about ${a.expected})`);
  return `${days.length} anomal${days.length === 1 ? 'y' : 'ies'}: ${days.join(', ')}; compare each with the source: session-etl verify --from DAY --to NEXT-DAY`;
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

function lag(seconds: number): string {
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} days`;
}

export function formatStatus(s: StoreStatus): string {
  const lines = [
    ...(s.source === 'snapshot' ? [`a run is going: figures as of ${s.asOf} (its state snapshot, state.json; the DuckDB file is held by the run)`] : []),
    `data directory  ${s.dataDir} (format ${s.format})`,
    `checkpoint      ${s.checkpoint ?? '(none yet)'}${s.lagSeconds !== null ? `  — ${lag(s.lagSeconds)} behind now` : ''}`,
    `coverage        ${s.coverage.map((c) => `${c.from} – ${c.to}`).join(', ') || '(none)'}`,
    `coverage holes  ${s.coverageHoles.map((c) => `${c.from} – ${c.to}`).join(', ') || 'none'}`,
    `partial days    ${describePartialDays(s.coverage)}`,
    `volume          ${describeAnomalies(s)}`,
    `last verified   ${describeVerification(s.lastVerification)}`,
    `rows            ${s.rows ?? '(parquet only: see the dataset)'}${s.pendingRows ? ` (+${s.pendingRows} committed, merged by the next run)` : ''}${s.rejected ? `, ${s.rejected} rejected` : ''}`,
    `partitions      ${s.partitions}${s.pendingPartitions.length ? ` (${s.pendingPartitions.length} waiting for a rewrite)` : ''}`,
    `size            ${human(s.bytes.total)} (DuckDB ${human(s.bytes.duckdb)}, Parquet ${human(s.bytes.parquet)})`,
    `running now     ${
      s.runningNow
        ? `pid ${s.runningNow.pid} on ${s.runningNow.host}: ${s.runningNow.command}, since ${s.runningNow.startedAt}`
        : s.lastRunDied
          ? `no: last run ${s.lastRunDied.runId ?? '(unnamed)'} died (pid ${s.lastRunDied.pid} gone); the next run takes over and resumes its work`
          : 'no'
    }`,
    '',
    'last runs:',
  ];
  for (const r of s.lastRuns) {
    lines.push(
      `  ${r.started_at}  ${String(r.kind).padEnd(8)} ${String(r.outcome).padEnd(13)} ${r.sessions_written} sessions ` +
        `(${r.sessions_new ?? '?'} new, ${r.sessions_updated ?? '?'} updated), ${r.retries} retries, ${r.rate_limited} 429s${r.paused_ms ? ` (paused ${(Number(r.paused_ms) / 1000).toFixed(1)} s${r.pace != null ? `, pace ${Number(r.pace).toFixed(2)}/s` : ''})` : ''}, ${r.bisections} bisections` +
        (r.error ? `\n      error: ${r.error}` : ''),
    );
  }
  if (!s.lastRuns.length) lines.push('  (none)');
  return lines.join('\n') + '\n';
}
