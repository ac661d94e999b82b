/**
 * The state snapshot `<data-dir>/state.json`: what `status` shows, published by the writer (at most
 * about once a second after commits, and at each run's end) so that readers see it while a run holds
 * the DuckDB file, which DuckDB lets no other process open. A public read interface (docs/running.md
 * "State snapshot"); it holds no secret (run errors are redacted before they are recorded).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { z } from 'zod';
import { checkpointOf, holes } from '../time/intervals.js';
import { isoOf, type Window } from '../time/windows.js';
import { queryRows, tableExists } from './duckdb.js';
import { writeFileAtomic } from './durable-fs.js';
import { DataDirError } from './errors.js';
import { boundRunError } from './run-log.js';
import { SINGLE_ACCOUNT, type SessionStore } from './session-store.js';
import { readVolumeAnomalies } from './read-volume-anomalies.js';
import { LastVerificationSchema, readLastVerifications } from './verify-log.js';
import { DEFAULT_VOLUME_RULE, VolumeAnomalySchema, type VolumeAnomaly, type VolumeRule } from './volume-anomalies.js';

export const STATE_FILE = 'state.json';
export const STATE_SNAPSHOT_VERSION = 1;

const Interval = z.object({ from: z.string(), to: z.string() });
const CoverageFields = { checkpoint: z.string().nullable(), coverage: z.array(Interval), coverageHoles: z.array(Interval) };

/** One account of a many-account store, as the snapshot and `status` show it. */
const AccountStateSchema = z.object({
  account: z.string(),
  ...CoverageFields,
  /** Its rows of the sessions table (null for format parquet). */
  rows: z.number().nullable(),
  rejected: z.number(),
  /** Its latest row of `_runs`. */
  lastRun: z.record(z.string(), z.unknown()).nullable(),
  /** Absent in snapshots of older versions, as the rest that is optional. */
  volumeAnomalies: z.array(VolumeAnomalySchema).optional(),
  lastVerification: LastVerificationSchema.nullable().optional(),
});
type AccountState = z.infer<typeof AccountStateSchema>;

export const StateSnapshotSchema = z.object({
  version: z.literal(STATE_SNAPSHOT_VERSION),
  /** When this snapshot was written (ISO 8601, UTC). */
  writtenAt: z.string(),
  format: z.enum(['duckdb', 'parquet', 'both']),
  ...CoverageFields,
  /** Rows of the sessions table (null for format parquet: see the dataset). */
  rows: z.number().nullable(),
  pendingPartitions: z.array(z.string()),
  pendingRows: z.number(),
  rejected: z.number(),
  /** The latest rows of `_runs`, newest first, every column as stored (timestamps as ISO strings). */
  lastRuns: z.array(z.record(z.string(), z.unknown())),
  /**
   * A many-account store: each account's state (docs/accounts.md). Its top-level `coverage` and
   * `coverageHoles` are then empty, `checkpoint` is the oldest account's, and `lastRuns` every account's.
   */
  accounts: z.array(AccountStateSchema).optional(),
  /** Judged under the rule of the run that wrote the snapshot; a many-account store's are each account's. */
  volumeAnomalies: z.array(VolumeAnomalySchema).optional(),
  lastVerification: LastVerificationSchema.nullable().optional(),
  /** The run that wrote this snapshot while it was going; null in the snapshot written at its end. */
  running: z
    .object({
      runId: z.string(),
      pid: z.number(),
      host: z.string(),
      startedAt: z.string(),
      command: z.string(),
      /** How far the run has got, as of its last commit. */
      progress: z
        .object({ windowsTotal: z.number(), windowsDone: z.number(), sessions: z.number(), at: z.string() })
        .optional(),
    })
    .nullable(),
});

export type StateSnapshot = z.infer<typeof StateSnapshotSchema>;
export type RunningRun = NonNullable<StateSnapshot['running']>;
/** A run's progress as it reports it after each commit (the snapshot adds when). */
export type RunProgress = Omit<NonNullable<RunningRun['progress']>, 'at'>;
/** How many rows of `_runs` a run's snapshot carries (the dashboard's run history). */
export const SNAPSHOT_RUNS = 50;
/** What the store itself holds (the snapshot without its envelope). */
export type StoreState = Omit<StateSnapshot, 'version' | 'writtenAt' | 'running'>;

/** Reads the store's state on `conn` in one read transaction (one consistent view while a run commits on other connections). */
export async function collectState(store: SessionStore, conn: DuckDBConnection, runs = 10, o: CollectOptions = {}): Promise<StoreState> {
  await conn.run('BEGIN TRANSACTION');
  try {
    const many = store.shape.many;
    // The counts in one statement (each statement costs a round trip).
    const countsSql = (pending: string) =>
      `SELECT ${store.format === 'parquet' ? 'NULL' : '(SELECT count(*) FROM sessions)'} AS rows,
         (SELECT count(*) FROM rejected_sessions) AS rejected, ${pending} AS pending`;
    type Counts = { rows: bigint | null; rejected: bigint; pending: bigint | number | null };
    // A store of a version without _pending_files (read by `status` before any run migrated it).
    const pendingSql = (await tableExists(conn, '_pending_files')) ? '(SELECT coalesce(sum(rows), 0) FROM _pending_files)' : '0';
    const counts = (await queryRows<Counts>(conn, countsSql(pendingSql)))[0];
    const rows = store.format === 'parquet' ? null : Number(counts?.rows ?? 0);
    const rejected = Number(counts?.rejected ?? 0);
    const pendingRows = Number(counts?.pending ?? 0);
    const lastRuns = (
      await queryRows(conn, `SELECT * FROM _runs ORDER BY started_at DESC LIMIT ${Math.max(1, Math.floor(runs))}`)
    ).map((r) => plainRow(r, { keepAccount: many }));
    const pendingPartitions = await store.pendingPartitions(conn);
    const common = { format: store.format, rows, pendingPartitions, pendingRows, rejected, lastRuns };
    const anomalies = o.anomalies ?? (await readVolumeAnomalies(conn, store, o.volume ?? DEFAULT_VOLUME_RULE));
    const verifications = await readLastVerifications(conn);
    if (!many) {
      return {
        ...common,
        ...coverageState(await store.coverage(SINGLE_ACCOUNT, conn)),
        volumeAnomalies: anomalies.get(SINGLE_ACCOUNT) ?? [],
        lastVerification: verifications.get(SINGLE_ACCOUNT) ?? null,
      };
    }
    const accounts = (await accountStates(store, conn)).map((a) => ({
      ...a,
      volumeAnomalies: anomalies.get(a.account) ?? [],
      lastVerification: verifications.get(a.account) ?? null,
    }));
    const checkpoints = accounts.map((a) => a.checkpoint);
    return {
      ...common,
      checkpoint: checkpoints.length && !checkpoints.includes(null) ? (checkpoints as string[]).sort()[0]! : null,
      coverage: [],
      coverageHoles: [],
      accounts,
    };
  } finally {
    await conn.run('COMMIT').catch(() => {});
  }
}

interface CollectOptions {
  volume?: VolumeRule;
  /** Anomalies computed already (the state publisher reuses them between the start and the end of a run). */
  anomalies?: Map<string, VolumeAnomaly[]>;
}

async function accountStates(store: SessionStore, conn: DuckDBConnection): Promise<AccountState[]> {
  const coverage = await store.allCoverage(conn);
  const names = await store.accountNames(conn);
  const counted = async (sql: string) =>
    new Map((await queryRows<{ a: string; n: bigint }>(conn, sql)).map((r) => [r.a, Number(r.n)]));
  const rows = store.format === 'parquet' ? undefined : await counted('SELECT account AS a, count(*) AS n FROM sessions GROUP BY 1');
  const rejected = await counted('SELECT account AS a, count(*) AS n FROM rejected_sessions GROUP BY 1');
  const latest = new Map(
    (await queryRows(conn, 'SELECT * FROM _runs QUALIFY row_number() OVER (PARTITION BY account ORDER BY started_at DESC) = 1')).map((r) => [
      String(r.account),
      plainRow(r, { keepAccount: true }),
    ]),
  );
  return names.map((account) => ({
    account,
    ...coverageState(coverage.get(account) ?? []),
    rows: rows ? (rows.get(account) ?? 0) : null,
    rejected: rejected.get(account) ?? 0,
    lastRun: latest.get(account) ?? null,
  }));
}

/** A coverage's checkpoint, windows and holes, as the snapshot shows them. */
function coverageState(c: readonly Window[]): Pick<AccountState, 'checkpoint' | 'coverage' | 'coverageHoles'> {
  const cp = checkpointOf(c);
  const iso = (w: Window) => ({ from: isoOf(w.start), to: isoOf(w.end) });
  return { checkpoint: cp !== undefined ? isoOf(cp) : null, coverage: c.map(iso), coverageHoles: holes(c).map(iso) };
}

/**
 * A `_runs` row as JSON values: BIGINTs as numbers, timestamps as ISO strings, the error bounded
 * (boundRunError); every column kept, `account` only with `keepAccount` (a single-account store's is always '').
 */
export function plainRow(r: Record<string, unknown>, { keepAccount }: { keepAccount: boolean }): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) {
    if (k === 'account' && !keepAccount) continue;
    o[k] = typeof v === 'bigint' ? Number(v) : v instanceof Date ? v.toISOString() : v;
  }
  // A row recorded before errors were bounded may hold a server's whole 2 MB answer, or escape sequences.
  if ('error' in o) o.error = boundRunError(o.error);
  return o;
}

/** Writes the snapshot atomically, mode 0640 whatever the umask: readers see the old one or the new one whole. */
export async function writeStateSnapshot(dataDir: string, tmpDir: string, snapshot: StateSnapshot): Promise<void> {
  await writeFileAtomic(join(dataDir, STATE_FILE), JSON.stringify(snapshot, null, 1) + '\n', {
    tmpDir,
    mode: 0o640,
    exactMode: true,
  });
}

/** The data directory's state snapshot, validated; null when there is none; DataDirError when it cannot be read. */
export async function readStateSnapshot(dataDir: string): Promise<StateSnapshot | null> {
  const path = join(dataDir, STATE_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new DataDirError(`cannot read the state snapshot ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new DataDirError(`${path} is not a session-etl state snapshot (not JSON); remove it: the next run writes it again`);
  }
  const parsed = StateSnapshotSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new DataDirError(
      `${path} is not a state snapshot this session-etl can read (${issue ? `${issue.path.join('.') || 'top level'}: ${issue.message}` : 'invalid'}); ` +
        'upgrade session-etl, or remove it: the next run writes it again',
    );
  }
  // A snapshot written before run errors were bounded may hold a server's whole answer.
  const snapshot = parsed.data;
  return { ...snapshot, lastRuns: snapshot.lastRuns.map((r) => ('error' in r ? { ...r, error: boundRunError(r.error) } : r)) };
}

/**
 * Publishes a run's state snapshot: `soon()` after each commit (at most one write per `minIntervalMs`,
 * the last request always honoured), `final()` at the end, read on a connection of its own so commits never wait.
 */
export class StatePublisher {
  private last = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private dirty = false;
  private stopped = false;
  private warned = false;
  private progress: RunningRun['progress'];

  constructor(
    private readonly store: SessionStore,
    private readonly running: RunningRun,
    private readonly opts: { minIntervalMs?: number; onError?: (err: unknown) => void; now?: () => number; volume?: VolumeRule } = {},
  ) {}

  /** Read at the first snapshot and the final one only: a snapshot a second must not count the whole table. */
  private anomalies: Map<string, VolumeAnomaly[]> | undefined;

  /** Asks for a snapshot soon (throttled), with the run's progress. Never throws; a failed write is reported once (onError). */
  soon(progress?: RunProgress): void {
    if (this.stopped) return;
    if (progress) this.progress = { ...progress, at: new Date((this.opts.now ?? Date.now)()).toISOString() };
    if (this.inFlight || this.timer) {
      this.dirty = true;
      return;
    }
    const wait = this.last + (this.opts.minIntervalMs ?? 1000) - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.soon();
      }, wait);
      this.timer.unref();
      return;
    }
    this.dirty = false;
    this.inFlight = this.publish(this.running)
      .catch((err) => {
        if (this.warned) return;
        this.warned = true;
        this.opts.onError?.(err);
      })
      .finally(() => {
        this.inFlight = undefined;
        this.last = Date.now();
        if (this.dirty) this.soon();
      });
  }

  /** Stops throttled writes and writes the final snapshot (the run no longer running). Call before the store closes. */
  async final(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
    await this.publish(null);
  }

  /** Outside the write queue, on a connection of its own (a new store re-attaching its file holds its statements: read-gate.ts). */
  private async publish(running: RunningRun | null): Promise<void> {
    const conn = await this.store.readConnection();
    if (running === null || !this.anomalies) {
      this.anomalies = await readVolumeAnomalies(conn, this.store, this.opts.volume ?? DEFAULT_VOLUME_RULE);
    }
    const state = await collectState(this.store, conn, SNAPSHOT_RUNS, { anomalies: this.anomalies });
    const now = this.opts.now ?? Date.now;
    await writeStateSnapshot(this.store.layout.storeDir, this.store.layout.tmpDir, {
      version: STATE_SNAPSHOT_VERSION,
      writtenAt: new Date(now()).toISOString(),
      ...state,
      running: running && this.progress ? { ...running, progress: this.progress } : running,
    });
  }
}
