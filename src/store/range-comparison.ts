/**
 * `session-etl verify`'s comparison of what the source returned for a range with what the store
 * holds, in DuckDB. Each fetched window arrives as a record file; once enough rows wait, a slice of
 * windows is compared on a connection of its own while later windows are fetched: the sessions each
 * window returned that started in it (`_vf`) against the stored ones that started in it (`_vs`). In
 * both with a contract field that differs (not `extracted_at`): changed; only fetched: missing (for
 * now); only stored: gone (for now). Only the differences are kept (`_vfix`, `_vgone`), so memory
 * follows the slice and the differences. At the end a "missing" session whose id the store holds
 * elsewhere (its start moved) is changed, and a "gone" one returned in another window is not gone.
 * `repair` commits each window's missing and changed rows with its coverage, as a backfill does.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Window } from '../time/windows.js';
import { SESSION_COLUMNS } from './contract.js';
import { queryRows, sqlString } from './duckdb.js';
import { exists } from './durable-fs.js';
import { partitionDir, type OutputFormat, type StoreLayout } from './layout.js';
import type { CommitResult, WindowCommit } from './commit-queue.js';
import { NDJSON_COLUMNS, NDJSON_MAX_OBJECT_BYTES, NDJSON_ACCOUNT_SELECT, RECORD_LINE_OF_ROW } from './ndjson.js';
import type { StoreShape } from './shape.js';

/**
 * Rows of fetched windows compared at once: half what a merge takes (a DuckDB row group), which
 * kept the peak RSS of a 300 k-session verify below its backfill's (docs/benchmarks.md, "Verify").
 */
const SLICE_ROWS = 65_536;
/** Windows of a repair handed to the commit queue before waiting for their commits. */
const REPAIR_GROUP = 64;

/** The contract's columns a verify compares: the record's fields, not when they were fetched. */
const COMPARED = SESSION_COLUMNS.filter((c) => c.source !== 'lineage').map((c) => c.name);

/** One window the verify fetched: its records as a file (every one checked), or none when it returned nothing. */
interface FetchedWindow {
  window: Window;
  file: string | null;
  count: number;
  /** When it was fetched, epoch seconds. */
  extractedAt: number;
}

/** What the comparison found on one day (sessions that started on it, within the range). */
export interface DayComparison {
  /** YYYY-MM-DD (UTC). */
  date: string;
  source: number;
  stored: number;
  missing: number;
  gone: number;
  changed: number;
  /** Of the changed sessions, how many differ in each column. */
  changedFields: Record<string, number>;
}

/** What a comparison needs of its store (a SessionStore gives it). */
interface ComparedStore {
  readonly format: OutputFormat;
  readonly shape: StoreShape;
  readonly layout: StoreLayout;
  /** A connection of its own (closed by the comparison). */
  openConnection(): Promise<DuckDBConnection>;
  commitWindow(commit: WindowCommit): Promise<CommitResult>;
  removeSessions(account: string, ids: readonly string[], days: readonly string[]): Promise<number>;
}

export class RangeComparison {
  /** Windows not handed to a slice yet, and their rows; rows handed over and not compared yet. */
  private waiting: FetchedWindow[] = [];
  private waitingRows = 0;
  private queuedRows = 0;
  private comparing: Promise<void> = Promise.resolve();
  private failure: unknown;
  private readonly fetched: Array<{ window: Window; extractedAt: number }> = [];
  private readonly counts = new Map<string, { source: number; stored: number }>();
  private closed = false;

  private constructor(
    private readonly store: ComparedStore,
    private readonly conn: DuckDBConnection,
    /** The account compared ('' in a single-account store). */
    private readonly account: string,
  ) {}

  static async open(store: ComparedStore, account: string): Promise<RangeComparison> {
    const conn = await store.openConnection();
    const c = new RangeComparison(store, conn, account);
    try {
      const fix = store.shape.tableDdl('_vfix', 'partition VARCHAR', 'ws BIGINT', 'we BIGINT', 'kind VARCHAR', 'fields VARCHAR[]');
      await conn.run(fix.replace('CREATE TABLE IF NOT EXISTS', 'CREATE OR REPLACE TEMP TABLE'));
      await conn.run('CREATE OR REPLACE TEMP TABLE _vgone (account VARCHAR, session_id VARCHAR, day VARCHAR)');
    } catch (err) {
      conn.closeSync();
      throw err;
    }
    return c;
  }

  /** Takes a fetched window; waits while two slices' worth wait already, so that the files on disk stay bounded. */
  async add(w: FetchedWindow): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    this.fetched.push({ window: w.window, extractedAt: w.extractedAt });
    this.waiting.push(w);
    this.waitingRows += w.count;
    if (this.waitingRows >= SLICE_ROWS) this.compareWaiting();
    while (this.waitingRows + this.queuedRows >= 2 * SLICE_ROWS && this.failure === undefined) await this.comparing;
    if (this.failure !== undefined) throw this.failure;
  }

  /** Compares what waits (in the background, after the slice before it). */
  private compareWaiting(): void {
    const slice = this.waiting;
    const rows = this.waitingRows;
    this.waiting = [];
    this.waitingRows = 0;
    this.queuedRows += rows;
    this.comparing = this.comparing.then(async () => {
      try {
        if (this.failure === undefined) await this.compareSlice(slice);
      } catch (err) {
        this.failure ??= err;
      } finally {
        this.queuedRows -= rows;
        await removeFiles(slice);
      }
    });
  }

  private async compareSlice(slice: readonly FetchedWindow[]): Promise<void> {
    if (!slice.length) return;
    const { shape } = this.store;
    const c = this.conn;
    const key = shape.key;
    const files = slice.filter((w) => w.file !== null);
    await c.run(
      `CREATE OR REPLACE TEMP TABLE _vw AS SELECT * FROM (VALUES ${slice.map((w) => `(${w.window.start}, ${w.window.end})`).join(', ')}) w(ws, we)`,
    );
    // The fetched sessions that started in their own window: once each (windows do not overlap,
    // and an answer holds an id once: the body scanner and flatten.ts see to it).
    const fetched = files.length
      ? `SELECT ${NDJSON_ACCOUNT_SELECT}, f.ws, f.we
         FROM read_json([${files.map((w) => sqlString(w.file!)).join(', ')}], columns = ${NDJSON_COLUMNS}, format = 'newline_delimited',
           maximum_object_size = ${NDJSON_MAX_OBJECT_BYTES}, filename = true) r
         JOIN (VALUES ${files.map((w) => `(${sqlString(w.file!)}, ${w.extractedAt}, ${sqlString(this.account)}, ${w.window.start}, ${w.window.end})`).join(', ')})
           f(filename, extracted, account, ws, we) USING (filename)
         WHERE r.started >= f.ws AND r.started < f.we`
      : `SELECT ${shape.columnList}, partition, ws, we FROM _vfix WHERE false`;
    await c.run(`CREATE OR REPLACE TEMP TABLE _vf AS ${fetched}`);
    const lo = Math.min(...slice.map((w) => w.window.start));
    const hi = Math.max(...slice.map((w) => w.window.end));
    await c.run(
      `CREATE OR REPLACE TEMP TABLE _vs AS SELECT s.* FROM (${await this.storedSql(lo, hi, slice)}) s
       JOIN _vw w ON epoch(s.started_at) >= w.ws AND epoch(s.started_at) < w.we`,
    );
    const differs = COMPARED.map((col) => `f.${col} IS DISTINCT FROM s.${col}`).join(' OR ');
    const fields = differingFields('f', 's');
    const fixCols = [...shape.columns, 'partition', 'ws', 'we'];
    const f = (cols: readonly string[]) => cols.map((x) => `f.${x}`).join(', ');
    await c.run(
      `INSERT INTO _vfix (${fixCols.join(', ')}, kind, fields) SELECT ${f(fixCols)}, 'changed', ${fields} FROM _vf f JOIN _vs s USING (${key}) WHERE ${differs};
       INSERT INTO _vfix (${fixCols.join(', ')}, kind, fields) SELECT ${f(fixCols)}, 'missing', [] FROM _vf f ANTI JOIN _vs s USING (${key});
       INSERT INTO _vgone SELECT ${shape.account('s')}, s.session_id, strftime(s.started_at, '%Y-%m-%d') FROM _vs s ANTI JOIN _vf f USING (${key})`,
    );
    const perDay = await queryRows<{ d: string; src: bigint; st: bigint }>(
      c,
      `SELECT d, sum(src) AS src, sum(st) AS st FROM (
         SELECT partition AS d, 1 AS src, 0 AS st FROM _vf UNION ALL SELECT strftime(started_at, '%Y-%m-%d'), 0, 1 FROM _vs) GROUP BY d`,
    );
    for (const r of perDay) {
      const have = this.counts.get(r.d) ?? { source: 0, stored: 0 };
      have.source += Number(r.src);
      have.stored += Number(r.st);
      this.counts.set(r.d, have);
    }
    await c.run('DROP TABLE _vf; DROP TABLE _vs; DROP TABLE _vw');
  }

  /** The account's stored sessions that may have started in the slice's windows. */
  private async storedSql(lo: number, hi: number, slice: readonly FetchedWindow[]): Promise<string> {
    const { shape } = this.store;
    const own = ` AND ${shape.account()} = ${sqlString(this.account)}`;
    const range = `started_at >= to_timestamp(${lo}) AND started_at < to_timestamp(${hi})${own}`;
    const source = await this.storedSource(() => daysOf(slice.map((w) => w.window)));
    return source ? `SELECT ${shape.columnList} FROM ${source} WHERE ${range}` : `SELECT ${shape.columnList} FROM _vfix WHERE false`;
  }

  /** Where the stored sessions are: the table, or this store's existing files of these days (null: none). */
  private async storedSource(days: () => Iterable<string> | Promise<Iterable<string>>): Promise<string | null> {
    if (this.store.format !== 'parquet') return 'sessions';
    const files: string[] = [];
    for (const d of await days()) {
      const file = join(partitionDir(this.store.layout.parquetDir, d), this.store.layout.partitionFile);
      if (await exists(file)) files.push(file);
    }
    return files.length ? `read_parquet([${files.map(sqlString).join(', ')}])` : null;
  }

  /** Compares what is left, then settles moved sessions (see the top). Returns each day's findings, oldest first. */
  async finish(): Promise<DayComparison[]> {
    this.compareWaiting();
    await this.comparing;
    if (this.failure !== undefined) throw this.failure;
    const { shape } = this.store;
    const c = this.conn;
    const candidates = Number((await queryRows<{ n: bigint }>(c, `SELECT count(*) AS n FROM _vfix WHERE kind = 'missing'`))[0]?.n ?? 0);
    if (candidates > 0) {
      const own = ` AND ${shape.account()} = ${sqlString(this.account)}`;
      const source = await this.storedSource(() => this.allDays());
      if (source) {
        await c.run(
          `CREATE OR REPLACE TEMP TABLE _vlook AS SELECT ${shape.columnList} FROM ${source}
           WHERE session_id IN (SELECT session_id FROM _vfix WHERE kind = 'missing')${own}`,
        );
        await c.run(
          `UPDATE _vfix SET kind = 'changed', fields = ${differingFields('_vfix', 'l')} FROM _vlook l
           WHERE _vfix.kind = 'missing' AND ${shape.sameSession('_vfix', 'l')};
           DROP TABLE _vlook`,
        );
      }
    }
    await c.run(
      `DELETE FROM _vgone WHERE EXISTS (SELECT 1 FROM _vfix x WHERE ${shape.sameSession('x', '_vgone')})`,
    );
    const kinds = await queryRows<{ d: string; kind: string; n: bigint }>(c, `SELECT partition AS d, kind, count(*) AS n FROM _vfix GROUP BY ALL`);
    const gone = await queryRows<{ d: string; n: bigint }>(c, `SELECT day AS d, count(*) AS n FROM _vgone GROUP BY ALL`);
    const fieldRows = await queryRows<{ d: string; field: string; n: bigint }>(
      c,
      `SELECT partition AS d, field, count(*) AS n FROM (SELECT partition, unnest(fields) AS field FROM _vfix WHERE kind = 'changed') GROUP BY ALL`,
    );
    const days = new Map<string, DayComparison>();
    const day = (d: string) => {
      let x = days.get(d);
      if (!x) days.set(d, (x = { date: d, source: 0, stored: 0, missing: 0, gone: 0, changed: 0, changedFields: {} }));
      return x;
    };
    for (const [d, n] of this.counts) Object.assign(day(d), n);
    for (const r of kinds) day(r.d)[r.kind === 'changed' ? 'changed' : 'missing'] += Number(r.n);
    for (const r of gone) day(r.d).gone += Number(r.n);
    for (const r of fieldRows) day(r.d).changedFields[r.field] = Number(r.n);
    return [...days.values()].sort((a, b) => (a.date < b.date ? -1 : 1));
  }

  /** Every day the fetched windows touch. */
  private async allDays(): Promise<Set<string>> {
    const rows = await queryRows<{ p: string }>(this.conn, 'SELECT DISTINCT partition AS p FROM _vfix');
    return new Set([...daysOf(this.fetched.map((f) => f.window)), ...rows.map((r) => r.p)]);
  }

  /**
   * Makes the store equal the source for the compared windows: with `deleteMissing` the gone sessions
   * (of `deleteDays` only, when given) removed first; then every fetched window committed with its missing and changed sessions.
   */
  async repair(o: { runId: string; deleteMissing: boolean; deleteDays?: ReadonlySet<string> }): Promise<{ repaired: number; deleted: number }> {
    const c = this.conn;
    let deleted = 0;
    if (o.deleteMissing) {
      // Only the days the caller allows (verify refuses the days whose answers look wrong).
      const gone = (await queryRows<{ id: string; day: string }>(c, 'SELECT session_id AS id, day FROM _vgone')).filter((g) => !o.deleteDays || o.deleteDays.has(g.day));
      if (gone.length) deleted = await this.store.removeSessions(this.account, gone.map((g) => g.id), [...new Set(gone.map((g) => g.day))]);
    }
    const repaired = Number((await queryRows<{ n: bigint }>(c, 'SELECT count(*) AS n FROM _vfix'))[0]?.n ?? 0);
    // Each window's rows as its record file, committed with its coverage (the commit queue groups waiting windows).
    const windows = [...this.fetched].sort((a, b) => a.window.start - b.window.start);
    const waiting: Array<Promise<unknown>> = [];
    for (const w of windows) {
      const lines = await queryRows<{ l: string }>(
        c,
        `SELECT ${RECORD_LINE_OF_ROW} AS l FROM _vfix WHERE ws = ${w.window.start} AND we = ${w.window.end} ORDER BY started_at, session_id`,
      );
      const bytes = Buffer.from(lines.map((r) => r.l).join('\n'), 'utf8');
      const commit = this.store.commitWindow({
        account: this.account,
        window: w.window,
        ndjson: { bytes, count: lines.length, extractedAt: w.extractedAt },
        rejected: [],
        runId: o.runId,
      });
      commit.catch(() => {});
      waiting.push(commit);
      if (waiting.length >= REPAIR_GROUP) await Promise.all(waiting.splice(0));
    }
    await Promise.all(waiting);
    return { repaired, deleted };
  }

  /** Drops what the comparison kept, removes the files not compared yet, closes its connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.comparing.catch(() => {});
    await removeFiles(this.waiting);
    this.waiting = [];
    this.conn.closeSync();
  }
}

/** The names of the compared columns in which rows `a` and `b` differ, as SQL. */
function differingFields(a: string, b: string): string {
  return `list_filter([${COMPARED.map((col) => `CASE WHEN ${a}.${col} IS DISTINCT FROM ${b}.${col} THEN '${col}' END`).join(', ')}], x -> x IS NOT NULL)`;
}

async function removeFiles(windows: readonly FetchedWindow[]): Promise<void> {
  await Promise.all(windows.map((w) => (w.file ? rm(w.file, { force: true }).catch(() => {}) : undefined)));
}

/** The UTC days (YYYY-MM-DD) that windows touch. */
function daysOf(windows: readonly Window[]): Set<string> {
  const out = new Set<string>();
  for (const w of windows) {
    for (let d = Math.floor(w.start / 86_400) * 86_400; d < w.end; d += 86_400) out.add(new Date(d * 1000).toISOString().slice(0, 10));
  }
  return out;
}
