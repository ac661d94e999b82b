/**
 * Moving committed rows from the pending record files into the `sessions` table, one bounded slice
 * per transaction.
 */
import { readFile, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { listValue, type DuckDBConnection } from '@duckdb/node-api';
import { crashPoint } from '../util/crash-point.js';
import { writeNewFile } from '../util/temp-file.js';
import { queryRows, sqlString } from './duckdb.js';
import { wrapWriteError } from './errors.js';
import { FILE_MODE } from './layout.js';
import { NDJSON_ACCOUNT_SELECT, NDJSON_COLUMNS, NDJSON_MAX_OBJECT_BYTES } from './ndjson.js';
import { SESSION_COLUMNS } from './contract.js';
import { mergeRows, VECTOR_ROWS } from './row-groups.js';
import { CONTENT_HASH, PARTITION_OF_STORED } from './schema.js';
import type { StoreShape } from './shape.js';
import type { AccountCounts, MergeResult } from './sink.js';

let splitSeq = 900_000_000;
/** The record field that holds the session id in a pending file. */
const ID_SOURCE = SESSION_COLUMNS.find((c) => c.name === 'session_id')!.source;

export interface MergeContext {
  pendingDir: string;
  /**
   * The store's row group size (store/row-groups.ts): a merge appends whole row groups (up to
   * row-groups.ts mergeRows), which DuckDB writes compressed once, one at a time, straight to the
   * file, and takes at most mergeRows plus a vector when it cannot align.
   */
  rowGroupRows: number;
  /**
   * The row id where the table's row groups of rowGroupRows begin (a store written with larger
   * groups keeps them; DuckDB starts the new size after its last group): read at the first merge.
   */
  groupBase?: bigint;
  /** The sessions table's columns, what identifies a session, and a stored row's account (shape.ts). */
  shape: StoreShape;
  /** Format both: mark the partitions a merge touched for a Parquet rewrite. */
  withParquet: boolean;
  /** The highest row id of `sessions` when the run began (see TableSink.beginRunCounts). */
  runRowidFloor: bigint | undefined;
  /** A generation number for Parquet marks, above every one already stored. */
  nextGen(c: DuckDBConnection): Promise<bigint>;
  /**
   * The session ids of pending files, by file name, read ahead: while a merge's statements run in
   * DuckDB, the next slice's files are read on the event loop (see prefetchIds). A file's name is
   * never reused by one store, and an entry whose count is not the file's row count is read again.
   */
  ids?: Map<string, Promise<string[]>>;
}

/**
 * One bounded merge, one transaction: appends at most sliceRows(ctx) rows of the oldest pending files
 * to the sessions table straight from read_json (no
 * intermediate copy, no sort: the files are read in window order, and each is sorted by start),
 * then keeps one row per session: among the versions of each session id the slice brought, the
 * newest extracted_at wins (ties: the row just fetched), but with the extracted_at of the stored
 * version it replaces when their content is the same; the others are deleted. The partitions
 * touched (the days of the new rows kept and of the versions they replace, but not those of a
 * session read again unchanged) are marked for a Parquet rewrite and the files forgotten, in the
 * same transaction. Memory is bounded by the slice and DuckDB's memory limit, never by the history.
 * Runs on its own connection, so windows keep committing meanwhile: the snapshot of this
 * transaction decides which files it takes. `taken`: the rows of the pending files it took off the
 * list (of a cut file, its head), which the memory trace's count of rows waiting for their merge
 * goes down by (table-sink.ts).
 */
export async function mergeSlice(
  c: DuckDBConnection,
  ctx: MergeContext,
  opts: {
    /**
     * Background merges: told the rows pending and the rows that would fill the table's row groups
     * when there are fewer; true makes the merge wait for more (it returns `waiting`), false merges
     * what there is. With enough rows the merge takes exactly that many.
     */
    waitForRowGroup?: (pending: number, target: number) => boolean;
  } = {},
): Promise<MergeResult & { more: boolean; waiting?: boolean; taken: number }> {
  const none = { counts: new Map() as AccountCounts, more: false, taken: 0 };
  const { shape } = ctx;
  await c.run('BEGIN TRANSACTION');
  let paths: string[] = [];
  let drop: string[] = [];
  try {
    const files = await queryRows<PendingFile>(c, 'SELECT file, extracted_at, rows, account FROM _pending_files ORDER BY file');
    if (files.length === 0) {
      await c.run('ROLLBACK');
      return none;
    }
    // Rows appended by this transaction are the ones above the highest row id it saw before
    // (DuckDB numbers a transaction's own rows after every committed one); checked below.
    const before = BigInt((await queryRows<{ m: bigint }>(c, 'SELECT coalesce(max(rowid), -1) AS m FROM sessions'))[0]?.m ?? -1n);
    let take = 0;
    let rows = 0;
    /** A file cut in two: its first rows go into this slice, the rest stays pending under a new name. */
    let cut: { head: string; tail: PendingFile } | undefined;
    // Exactly enough rows to fill the table's row groups: merges then append whole row groups,
    // which DuckDB writes compressed once, straight to the file, and the close's checkpoint finds
    // nothing to rewrite (docs/benchmarks.md). (DuckDB writes an append straight to the file only when
    // it is at least a row group or the table is empty: one that fills a partly filled group goes
    // through the WAL.)
    ctx.groupBase ??= await groupBase(c, before, ctx.rowGroupRows);
    const groupRows = BigInt(ctx.rowGroupRows);
    // Whole groups (up to mergeRows) when the table's last group is full; otherwise what fills it, alone
    // (an append of a row group or more after a partly filled group starts a new group, and the partly
    // filled one would stay so).
    const inGroup = Number((((before + 1n - ctx.groupBase) % groupRows) + groupRows) % groupRows);
    const target = inGroup === 0 ? mergeRows(ctx.rowGroupRows) : ctx.rowGroupRows - inGroup;
    const pending = files.reduce((n, f) => n + Number(f.rows), 0);
    if (opts.waitForRowGroup && pending < target && opts.waitForRowGroup(pending, target)) {
      await c.run('ROLLBACK');
      return { ...none, waiting: true };
    }
    const aligned = opts.waitForRowGroup !== undefined && pending >= target;
    // The files looked at for sessions brought more than once: with alignment, the whole files that
    // fit, the one to cut and one more; otherwise the slice.
    let candidates = 0;
    if (aligned) {
      let r = 0;
      while (candidates < files.length && r + Number(files[candidates]!.rows) <= target) r += Number(files[candidates++]!.rows);
      candidates = Math.min(files.length, candidates + 2);
    } else {
      while (candidates < files.length && (candidates === 0 || rows + Number(files[candidates]!.rows) <= sliceRows(ctx))) rows += Number(files[candidates++]!.rows);
      take = candidates;
    }
    const older = await olderVersions(c, ctx, files.slice(0, candidates));
    if (aligned) {
      rows = 0;
      const counted = (i: number) => Number(files[i]!.rows) - older.count(i);
      while (take < candidates && rows + counted(take) <= target) rows += counted(take++);
      if (rows < target && take < candidates) {
        cut = await splitFile(ctx.pendingDir, files[take]!, target - rows, older.idsIn(take));
        rows = target;
        take++;
      }
    }
    const slice = files.slice(0, take);
    paths = slice.map((f, i) => join(ctx.pendingDir, cut && i === take - 1 ? cut.head : f.file));
    drop = cut ? [join(ctx.pendingDir, cut.head), join(ctx.pendingDir, cut.tail.file)] : [];
    const source = `SELECT ${NDJSON_ACCOUNT_SELECT}, f.k FROM read_json([${paths.map(sqlString).join(', ')}], columns = ${NDJSON_COLUMNS},
        format = 'newline_delimited', maximum_object_size = ${NDJSON_MAX_OBJECT_BYTES}, filename = true) r
      JOIN (VALUES ${paths.map((p, i) => `(${sqlString(p)}, ${slice[i]!.extracted_at}, ${i}, ${sqlString(slice[i]!.account)})`).join(', ')})
        f(filename, extracted, k, account) USING (filename)`;
    // A session the files looked at bring more than once goes in only from the source of its newest
    // version (newest extracted_at, then the later source); the others are left out.
    const newest = older.any ? ' x ANTI JOIN _dups d ON d.session_id = x.session_id AND d.account = x.account AND d.k <> x.k' : '';
    // The next slice's ids are read while this one's statements run (a third of a merge's time
    // after the last answer was this read, on the event loop, before the insert could start); this
    // slice's are not needed any more (a merge that fails reads them again).
    for (const f of files.slice(0, take)) ctx.ids?.delete(f.file);
    prefetchIds(ctx, files.slice(take));
    const added = Number((await c.run(`INSERT INTO sessions SELECT ${shape.columnList} FROM (${source})${newest}`)).rowsChanged);
    // The rows appended, by account.
    const appended = await queryRows<{ account: string; n: bigint }>(
      c,
      `SELECT ${shape.account()} AS account, count(*) AS n FROM sessions WHERE rowid > ${before} GROUP BY 1`,
    );
    const seen = appended.reduce((n, r) => n + Number(r.n), 0);
    if (seen !== added) throw new Error(`internal check failed: appended ${added} rows, found ${seen} above row id ${before}`);
    // Every version of the sessions this slice brought (narrow: ids, times, row ids).
    await c.run(
      `CREATE OR REPLACE TEMP TABLE _versions AS
       SELECT s.rowid AS rid, s.rowid > ${before} AS fresh, ${shape.account('s')} AS account, s.session_id, s.extracted_at,
         ${PARTITION_OF_STORED.replace('started_at', 's.started_at')} AS p
       FROM sessions s SEMI JOIN (SELECT DISTINCT ${shape.key} FROM sessions WHERE rowid > ${before}) n USING (${shape.key})`,
    );
    // Stored versions at or below the run's first row id were there before the run: replacing one
    // is an update. One stored by this run (a session two windows returned) was counted already.
    const floor = ctx.runRowidFloor ?? (1n << 62n);
    const losers = await queryRows<{ account: string; fresh: boolean; older: boolean; p: string; n: bigint; ids: bigint }>(
      c,
      `CREATE OR REPLACE TEMP TABLE _losers AS
       SELECT rid, fresh, p, account, session_id FROM _versions
       SEMI JOIN (SELECT account, session_id FROM _versions GROUP BY ALL HAVING count(*) > 1) d USING (account, session_id)
       QUALIFY row_number() OVER (PARTITION BY account, session_id ORDER BY extracted_at DESC, fresh DESC, rid DESC) > 1;
       SELECT account, fresh, rid <= ${floor} AS older, p, count(*) AS n, count(DISTINCT session_id) AS ids FROM _losers GROUP BY ALL`,
    );
    // Per account: rows appended, versions of this slice that lost, sessions replacing one stored
    // before the run (updated) or stored by this run already (counted then).
    const perAccount = new Map<string, { added: number; freshLost: number; updated: number; again: number }>();
    const tally = (a: string) => perAccount.get(a) ?? perAccount.set(a, { added: 0, freshLost: 0, updated: 0, again: 0 }).get(a)!;
    for (const r of appended) tally(r.account).added += Number(r.n);
    for (const l of losers) {
      const t = tally(l.account);
      if (l.fresh) t.freshLost += Number(l.n);
      else if (l.older) t.updated += Number(l.ids);
      else t.again += Number(l.ids);
    }
    // A session read again with the content it is stored with is not news: its row stays as it was
    // stored (extracted_at too; see keepUnchanged), so its day is not rewritten, and replacing a
    // version stored before the run is an update only when its content changed: every export
    // re-reads the lookback (a day). Compared by a hash of the two rows, fetched by row id (a few
    // ms for a night's re-reads; only re-reads pay it).
    await c.run('CREATE OR REPLACE TEMP TABLE _same (old BIGINT, new BIGINT)');
    const unchanged = losers.some((l) => !l.fresh) ? await keepUnchanged(c, floor) : new Map<string, number>();
    if (losers.length) await c.run('DELETE FROM sessions WHERE rowid IN (SELECT rid FROM _losers)');
    const counts: AccountCounts = new Map();
    for (const [a, t] of perAccount) {
      const same = unchanged.get(a) ?? 0;
      counts.set(a, { inserted: t.added - t.freshLost - t.updated - t.again, updated: t.updated - same, unchanged: same });
    }
    if (ctx.withParquet) {
      // The days a session was added to, changed in, or left: those of the rows kept from this slice,
      // and of the stored versions they replace.
      const touched = await queryRows<{ p: string }>(
        c,
        `SELECT DISTINCT p FROM _losers WHERE NOT fresh AND rid NOT IN (SELECT old FROM _same)
         UNION SELECT DISTINCT p FROM _versions WHERE fresh AND rid NOT IN (SELECT rid FROM _losers) AND rid NOT IN (SELECT new FROM _same)`,
      );
      if (touched.length) {
        await c.run(`INSERT INTO _parquet_pending SELECT unnest($1::VARCHAR[]), $2`, [listValue(touched.map((r) => r.p)), await ctx.nextGen(c)]);
      }
    }
    await c.run('DROP TABLE _versions; DROP TABLE _losers; DROP TABLE _same; DROP TABLE IF EXISTS _dups');
    await c.run(`DELETE FROM _pending_files WHERE file IN (SELECT unnest($1::VARCHAR[]))`, [listValue(slice.map((f) => f.file))]);
    if (cut) {
      await c.run('INSERT INTO _pending_files (file, extracted_at, rows, account) VALUES ($1, $2, $3, $4)', [
        cut.tail.file, cut.tail.extracted_at, cut.tail.rows, cut.tail.account,
      ]);
    }
    crashPoint('mid-merge');
    await c.run('COMMIT');
    crashPoint('after-merge');
    // The tail is committed now; the files merged (the cut one's head and the cut file itself) go,
    // all at once: removed one after the other, each removal waited for turns of an event loop busy
    // with the fetching, ~1 s a merge while windows still arrived (docs/benchmarks.md, fourth pass).
    await Promise.all([...new Set([...paths, ...slice.map((f) => join(ctx.pendingDir, f.file))])].map((p) => rm(p, { force: true })));
    const taken = slice.reduce((n, f) => n + Number(f.rows), 0) - (cut ? Number(cut.tail.rows) : 0);
    return { counts, more: take < files.length || cut !== undefined, taken };
  } catch (err) {
    await c.run('ROLLBACK').catch(() => {});
    // Neither part of a cut file was committed: the whole file is still pending.
    for (const p of drop) await rm(p, { force: true }).catch(() => {});
    await c.run('DROP TABLE IF EXISTS _versions; DROP TABLE IF EXISTS _losers; DROP TABLE IF EXISTS _dups; DROP TABLE IF EXISTS _same').catch(() => {});
    throw wrapWriteError(err, 'merging committed rows into the sessions table');
  }
}

/**
 * Sessions of this slice whose stored version (one that was there before the slice) loses to a new
 * version with the same content (see CONTENT_HASH): the new row takes the stored one's extracted_at,
 * so the row stays as it was stored, and is kept in the temporary table `_same` (old and new row
 * ids), whose days are then not marked for a rewrite. Returns, by account, how many of them were
 * stored before the run (row id at or below `floor`): those re-read unchanged. Reads `_losers` and
 * `_versions` (the winner is the one version of a session that is not a loser).
 */
async function keepUnchanged(c: DuckDBConnection, floor: bigint): Promise<Map<string, number>> {
  await c.run(
    `CREATE OR REPLACE TEMP TABLE _same AS
     WITH pair AS (
       SELECT l.account, l.session_id, l.rid AS old, v.rid AS new FROM _losers l JOIN _versions v USING (account, session_id)
       WHERE NOT l.fresh AND v.fresh AND v.rid NOT IN (SELECT rid FROM _losers)),
     h AS (SELECT rowid AS rid, ${CONTENT_HASH} AS h, extracted_at FROM sessions WHERE rowid IN (SELECT old FROM pair UNION ALL SELECT new FROM pair))
     SELECT p.*, o.extracted_at FROM pair p JOIN h o ON o.rid = p.old JOIN h w ON w.rid = p.new WHERE o.h = w.h`,
  );
  await c.run('UPDATE sessions SET extracted_at = s.extracted_at FROM _same s WHERE sessions.rowid = s.new');
  const rows = await queryRows<{ account: string; n: bigint }>(
    c,
    `SELECT account, count(DISTINCT session_id) AS n FROM _same WHERE old <= ${floor} GROUP BY 1`,
  );
  return new Map(rows.map((r) => [r.account, Number(r.n)]));
}

/**
 * Cuts a pending file after its first `keep` records: the head (merged by this slice) and the tail
 * (left pending, committed with the merge) become files of their own, the tail fsynced, both named
 * like a window's file (rows-<window start>-…) so that a crash before the merge commits leaves them
 * unlisted, to be removed when the store is next opened, and the whole file still pending.
 */
async function splitFile(
  dir: string,
  f: PendingFile,
  count: number,
  leftOut: ReadonlySet<string>,
): Promise<{ head: string; tail: PendingFile }> {
  const bytes = await readFile(join(dir, f.file));
  let nl = -1;
  let keep = 0;
  for (let counted = 0; counted < count; keep++) {
    const from = nl + 1;
    nl = bytes.indexOf(0x0a, from);
    if (nl < 0 || keep + 1 >= Number(f.rows)) throw new Error(`internal check failed: pending file ${f.file} holds fewer than ${count + 1} records to merge`);
    if (leftOut.size === 0 || !leftOut.has(keyOf(f.account, recordId(bytes, from, nl)))) counted++;
  }
  const start = /^rows-(\d+)-/.exec(f.file)?.[1] ?? '000000000000';
  // Created new (never over another file, never through a link), with an unguessable end.
  const name = async (data: Buffer, sync: boolean): Promise<string> =>
    basename(await writeNewFile((suffix) => join(dir, `rows-${start}-${process.pid}-${++splitSeq}-${suffix}.ndjson`), data, { mode: FILE_MODE, sync }));
  const head = await name(bytes.subarray(0, nl), false);
  const tail = await name(bytes.subarray(nl + 1), true);
  return { head, tail: { file: tail, extracted_at: f.extracted_at, rows: Number(f.rows) - keep, account: f.account } };
}

/** A row of `_pending_files`: a committed window's record file waiting to be merged. */
interface PendingFile {
  file: string;
  extracted_at: number;
  rows: bigint | number;
  /** The account whose window it is ('' in a single-account store). */
  account: string;
}

/** What identifies a session while merging: its account ('' the one account of a single-account store) and its id. */
function keyOf(account: string, id: string): string {
  return `${account}\u0000${id}`;
}

function splitKey(key: string): { account: string; id: string } {
  const at = key.indexOf('\u0000');
  return { account: key.slice(0, at), id: key.slice(at + 1) };
}

/** Pending files read at once while looking for sessions brought twice. */
const READS_IN_FLIGHT = 4;

/**
 * Sessions the given pending files (numbered by position) bring more than once (a session that starts on a window's boundary is in both windows): kept in the temporary
 * table `_dups` as (session_id, k: the source of the newest version). The merge leaves the older
 * versions out of its insert: deleting rows of its own appends afterwards made DuckDB write the
 * whole slice through the WAL instead of straight to the file as whole row groups, and compress it
 * all again in the close's checkpoint (docs/benchmarks.md, second round). Reads only the ids.
 */
async function olderVersions(
  c: DuckDBConnection,
  ctx: MergeContext,
  files: readonly PendingFile[],
): Promise<{ any: boolean; count(k: number): number; idsIn(k: number): Set<string> }> {
  const none = { any: false, count: () => 0, idsIn: () => new Set<string>() };
  if (files.length < 2) return none;
  /** The source (file position) where each id was first seen; ids seen again: every source holding them. */
  const first = new Map<string, number>();
  const again = new Map<string, number[]>();
  const see = (id: string, k: number) => {
    const f = first.get(id);
    if (f === undefined) first.set(id, k);
    else {
      const ks = again.get(id);
      if (ks) ks.push(k);
      else again.set(id, [f, k]);
    }
  };
  // Files read a few at a time off the event loop (one await per file on a busy event loop made the
  // scan slow; reading them synchronously held the fetching up, long text most), or read ahead.
  const perFile: string[][] = new Array(files.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(READS_IN_FLIGHT, files.length) }, async () => {
      while (next < files.length) {
        const k = next++;
        perFile[k] = await idsOfFile(ctx, files[k]!);
      }
    }),
  );
  perFile.forEach((list, k) => {
    const account = files[k]!.account;
    for (const id of list) see(keyOf(account, id), k);
  });
  first.clear();
  if (again.size === 0) return none;
  const extractedAt = (k: number) => Number(files[k]!.extracted_at);
  const dups = [...again].map(([key, ks]) => {
    let win = ks[0]!;
    for (const k of ks) if (extractedAt(k) > extractedAt(win) || (extractedAt(k) === extractedAt(win) && k > win)) win = k;
    return { key, k: win, ks };
  });
  const parts = dups.map((d) => splitKey(d.key));
  await c.run(
    'CREATE OR REPLACE TEMP TABLE _dups AS SELECT unnest($1::VARCHAR[]) AS session_id, unnest($2::INTEGER[]) AS k, unnest($3::VARCHAR[]) AS account',
    [listValue(parts.map((p) => p.id)), listValue(dups.map((d) => d.k)), listValue(parts.map((p) => p.account))],
  );
  const counts = new Map<number, number>();
  const ids = new Map<number, Set<string>>();
  for (const d of dups) {
    for (const k of d.ks) {
      if (k === d.k) continue;
      counts.set(k, (counts.get(k) ?? 0) + 1);
      if (!ids.has(k)) ids.set(k, new Set());
      ids.get(k)!.add(d.key);
    }
  }
  return { any: true, count: (k) => counts.get(k) ?? 0, idsIn: (k) => ids.get(k) ?? new Set() };
}

/**
 * Most rows one merge takes from the pending files when it does not align to the row groups (the
 * flush's merges): mergeRows and a vector (DuckDB still compresses one row group at a time, at the
 * checkpoint). Merges run in the background while windows are fetched (docs/benchmarks.md).
 */
function sliceRows(ctx: MergeContext): number {
  return mergeRows(ctx.rowGroupRows) + VECTOR_ROWS;
}

/**
 * Where the table's row groups of ctx.rowGroupRows begin: after the last row group when that one
 * holds a row group's worth already (a store written with larger groups: DuckDB starts a new group
 * after it), else at its start. `before` is the table's highest row id.
 */
async function groupBase(c: DuckDBConnection, before: bigint, rowGroupRows: number): Promise<bigint> {
  const last = await queryRows<{ n: bigint | number | null }>(
    c,
    // The first column's data segments (column_path [0]; its validity is [0, 0]) hold each of the group's rows once.
    `SELECT sum(count) AS n FROM pragma_storage_info('sessions') WHERE column_path = '[0]'
       AND row_group_id = (SELECT max(row_group_id) FROM pragma_storage_info('sessions'))`,
  );
  const inLast = BigInt(last[0]?.n ?? 0);
  return inLast >= BigInt(rowGroupRows) ? before + 1n : before + 1n - inLast;
}

/**
 * The session ids of a pending file's records, in order: read ahead, or read now and kept in
 * ctx.ids (a file looked at beyond the slice, merged by the next one, is then not read again).
 */
async function idsOfFile(ctx: MergeContext, f: { file: string; rows: bigint | number }): Promise<string[]> {
  const ahead = await ctx.ids?.get(f.file)?.catch(() => undefined);
  if (ahead && ahead.length === Number(f.rows)) return ahead;
  const read = readIds(join(ctx.pendingDir, f.file));
  ctx.ids?.set(f.file, read);
  return read;
}

async function readIds(path: string): Promise<string[]> {
  const bytes = await readFile(path);
  const ids: string[] = [];
  for (let from = 0; from < bytes.length; ) {
    let nl = bytes.indexOf(0x0a, from);
    if (nl < 0) nl = bytes.length;
    if (nl > from) ids.push(recordId(bytes, from, nl));
    from = nl + 1;
  }
  return ids;
}

/**
 * Starts reading the ids of the first of `files` (up to about a slice of rows, one file after the
 * other) into ctx.ids, unless they are there. Every entry is in place at once, so a merge that
 * wants a file waits for its read rather than reading it again. A read that fails is forgotten: the
 * merge reads the file itself and reports the error then.
 */
function prefetchIds(ctx: MergeContext, files: ReadonlyArray<{ file: string; rows: bigint | number }>): void {
  const cache = ctx.ids;
  if (!cache) return;
  let rows = 0;
  // One file at a time: the reads run beside the merge's statements, whose memory they add to.
  let chain: Promise<unknown> = Promise.resolve();
  for (const f of files) {
    if (rows >= sliceRows(ctx)) break;
    rows += Number(f.rows);
    if (cache.has(f.file)) continue;
    const read = chain.then(() => readIds(join(ctx.pendingDir, f.file)));
    chain = read.catch(() => cache.delete(f.file));
    cache.set(f.file, read);
  }
}

const ID_HEAD = Buffer.from(`{"${ID_SOURCE}":"`);

/**
 * The session id of the record in bytes [from, to): a pending file's records start with the id
 * (reporting/sessions-body.ts keeps the query's field order); an id with an escape or a byte
 * outside ASCII, or a record that does not start so, is parsed whole.
 */
function recordId(bytes: Buffer, from: number, to: number): string {
  let end = -1;
  if (to - from > ID_HEAD.length && bytes.compare(ID_HEAD, 0, ID_HEAD.length, from, from + ID_HEAD.length) === 0) {
    for (let i = from + ID_HEAD.length; i < to; i++) {
      const b = bytes[i]!;
      if (b === 0x22) {
        end = i;
        break;
      }
      if (b === 0x5c || b >= 0x80) break;
    }
  }
  if (end > 0) return bytes.toString('latin1', from + ID_HEAD.length, end);
  return String((JSON.parse(bytes.toString('utf8', from, to)) as Record<string, unknown>)[ID_SOURCE]);
}
