/** Moving committed rows from the pending record files into the `sessions` table, one bounded slice per transaction. */
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
const ID_SOURCE = SESSION_COLUMNS.find((c) => c.name === 'session_id')!.source;

export interface MergeContext {
  pendingDir: string;
  /** The store's row group size: a merge appends whole groups (up to mergeRows), else at most sliceRows. */
  rowGroupRows: number;
  /** The row id where the table's groups of rowGroupRows begin (after larger ones a store kept): read at the first merge. */
  groupBase?: bigint;
  shape: StoreShape;
  /** Format both: mark the partitions a merge touched for a Parquet rewrite. */
  withParquet: boolean;
  /** The highest row id of `sessions` when the run began (see TableSink.beginRunCounts). */
  runRowidFloor: bigint | undefined;
  nextGen(c: DuckDBConnection): Promise<bigint>;
  /**
   * Pending files' session ids by file name, read ahead while a merge's statements run (prefetchIds).
   * Names are never reused; an entry whose count is not the file's row count is read again.
   */
  ids?: Map<string, Promise<string[]>>;
}

/**
 * One bounded merge, one transaction: appends at most sliceRows(ctx) rows of the oldest pending files
 * straight from read_json (no copy, no sort: files in window order, each sorted by start), then keeps
 * one row per session: the newest extracted_at wins (ties: the row just fetched), taking the stored
 * version's extracted_at when the content is the same; the others are deleted. The days touched
 * (not those of a session read again unchanged) are marked for a Parquet rewrite and the files
 * forgotten, in the same transaction. Memory is bounded by the slice, never by the history. Runs on
 * its own connection, so windows keep committing; this transaction's snapshot decides which files it
 * takes. `taken`: the pending rows it took off the list (of a cut file, its head).
 */
export async function mergeSlice(
  c: DuckDBConnection,
  ctx: MergeContext,
  opts: {
    /** Background merges: told the rows pending and the target when fewer; true waits (returns `waiting`). */
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
    // This transaction's rows are those above the highest row id it saw (DuckDB numbers them after every committed one).
    const before = BigInt((await queryRows<{ m: bigint }>(c, 'SELECT coalesce(max(rowid), -1) AS m FROM sessions'))[0]?.m ?? -1n);
    let take = 0;
    let rows = 0;
    let cut: { head: string; tail: PendingFile } | undefined;
    // Exactly enough rows to fill the row groups: DuckDB then writes them compressed once, straight to the
    // file (only an append of a group or more is; one filling a partly filled group goes through the WAL),
    // and the close's checkpoint finds nothing to rewrite (docs/benchmarks.md).
    ctx.groupBase ??= await groupBase(c, before, ctx.rowGroupRows);
    const groupRows = BigInt(ctx.rowGroupRows);
    // Whole groups when the last group is full; otherwise what fills it, alone (a bigger append would
    // start a new group and leave that one partly filled).
    const inGroup = Number((((before + 1n - ctx.groupBase) % groupRows) + groupRows) % groupRows);
    const target = inGroup === 0 ? mergeRows(ctx.rowGroupRows) : ctx.rowGroupRows - inGroup;
    const pending = files.reduce((n, f) => n + Number(f.rows), 0);
    if (opts.waitForRowGroup && pending < target && opts.waitForRowGroup(pending, target)) {
      await c.run('ROLLBACK');
      return { ...none, waiting: true };
    }
    const aligned = opts.waitForRowGroup !== undefined && pending >= target;
    // Files looked at for sessions brought twice: aligned, those that fit, the one to cut and one more; else the slice.
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
    // A session brought more than once goes in only from the source of its newest version (see olderVersions).
    const newest = older.any ? ' x ANTI JOIN _dups d ON d.session_id = x.session_id AND d.account = x.account AND d.k <> x.k' : '';
    // The next slice's ids are read while this one's statements run (that read was a third of a merge's
    // time after the last answer); this slice's are not needed any more.
    for (const f of files.slice(0, take)) ctx.ids?.delete(f.file);
    prefetchIds(ctx, files.slice(take));
    const added = Number((await c.run(`INSERT INTO sessions SELECT ${shape.columnList} FROM (${source})${newest}`)).rowsChanged);
    const appended = await queryRows<{ account: string; n: bigint }>(
      c,
      `SELECT ${shape.account()} AS account, count(*) AS n FROM sessions WHERE rowid > ${before} GROUP BY 1`,
    );
    const seen = appended.reduce((n, r) => n + Number(r.n), 0);
    if (seen !== added) throw new Error(`internal check failed: appended ${added} rows, found ${seen} above row id ${before}`);
    await c.run(
      `CREATE OR REPLACE TEMP TABLE _versions AS
       SELECT s.rowid AS rid, s.rowid > ${before} AS fresh, ${shape.account('s')} AS account, s.session_id, s.extracted_at,
         ${PARTITION_OF_STORED.replace('started_at', 's.started_at')} AS p
       FROM sessions s SEMI JOIN (SELECT DISTINCT ${shape.key} FROM sessions WHERE rowid > ${before}) n USING (${shape.key})`,
    );
    // Replacing a version stored before the run is an update; one this run stored was counted already.
    const floor = ctx.runRowidFloor ?? (1n << 62n);
    const losers = await queryRows<{ account: string; fresh: boolean; older: boolean; p: string; n: bigint; ids: bigint }>(
      c,
      `CREATE OR REPLACE TEMP TABLE _losers AS
       SELECT rid, fresh, p, account, session_id FROM _versions
       SEMI JOIN (SELECT account, session_id FROM _versions GROUP BY ALL HAVING count(*) > 1) d USING (account, session_id)
       QUALIFY row_number() OVER (PARTITION BY account, session_id ORDER BY extracted_at DESC, fresh DESC, rid DESC) > 1;
       SELECT account, fresh, rid <= ${floor} AS older, p, count(*) AS n, count(DISTINCT session_id) AS ids FROM _losers GROUP BY ALL`,
    );
    const perAccount = new Map<string, { added: number; freshLost: number; updated: number; again: number }>();
    const tally = (a: string) => perAccount.get(a) ?? perAccount.set(a, { added: 0, freshLost: 0, updated: 0, again: 0 }).get(a)!;
    for (const r of appended) tally(r.account).added += Number(r.n);
    for (const l of losers) {
      const t = tally(l.account);
      if (l.fresh) t.freshLost += Number(l.n);
      else if (l.older) t.updated += Number(l.ids);
      else t.again += Number(l.ids);
    }
    // A session read again unchanged is not news (every export re-reads the lookback): its row stays as
    // stored and its day is not rewritten (keepUnchanged; a hash by row id, only re-reads pay it).
    await c.run('CREATE OR REPLACE TEMP TABLE _same (old BIGINT, new BIGINT)');
    const unchanged = losers.some((l) => !l.fresh) ? await keepUnchanged(c, floor) : new Map<string, number>();
    if (losers.length) await c.run('DELETE FROM sessions WHERE rowid IN (SELECT rid FROM _losers)');
    const counts: AccountCounts = new Map();
    for (const [a, t] of perAccount) {
      const same = unchanged.get(a) ?? 0;
      counts.set(a, { inserted: t.added - t.freshLost - t.updated - t.again, updated: t.updated - same, unchanged: same });
    }
    if (ctx.withParquet) {
      // The days of the rows kept from this slice, and of the stored versions they replace.
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
    // The files merged go all at once: one after the other, each waited for turns of the busy event
    // loop, ~1 s a merge (docs/benchmarks.md, fourth pass).
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
 * Stored versions losing to a new one with the same content (CONTENT_HASH): the new row takes the
 * stored extracted_at, and the pair goes to `_same` (its days are not marked). Returns, by account,
 * those stored before the run (row id ≤ `floor`): re-read unchanged.
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
 * Cuts a pending file after `count` records counted (those in `leftOut` are not): head (merged) and
 * tail (left pending; fsynced) become files named like a window's, so that a crash before the merge
 * commits leaves them unlisted, removed at the next open, and the whole file still pending.
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
  const name = async (data: Buffer, sync: boolean): Promise<string> =>
    basename(await writeNewFile((suffix) => join(dir, `rows-${start}-${process.pid}-${++splitSeq}-${suffix}.ndjson`), data, { mode: FILE_MODE, sync }));
  const head = await name(bytes.subarray(0, nl), false);
  const tail = await name(bytes.subarray(nl + 1), true);
  return { head, tail: { file: tail, extracted_at: f.extracted_at, rows: Number(f.rows) - keep, account: f.account } };
}

/** A row of `_pending_files`. */
interface PendingFile {
  file: string;
  extracted_at: number;
  rows: bigint | number;
  account: string;
}

function keyOf(account: string, id: string): string {
  return `${account}\u0000${id}`;
}

/** Pending files read at once while looking for sessions brought twice. */
const READS_IN_FLIGHT = 4;

/**
 * Sessions the files (numbered by position) bring more than once (one on a window boundary), kept in
 * `_dups` as (session_id, k: the source of the newest version; ties: the later). The insert leaves
 * the others out: deleting rows of its own append sent the whole slice through the WAL instead of
 * straight to the file (docs/benchmarks.md, second round).
 */
async function olderVersions(
  c: DuckDBConnection,
  ctx: MergeContext,
  files: readonly PendingFile[],
): Promise<{ any: boolean; count(k: number): number; idsIn(k: number): Set<string> }> {
  const none = { any: false, count: () => 0, idsIn: () => new Set<string>() };
  if (files.length < 2) return none;
  const first = new Map<string, number>();
  const again = new Map<string, number[]>();
  // A few at a time: one await per file on a busy event loop was slow; synchronous reads held the fetching up.
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
    for (const id of list) {
      const key = keyOf(files[k]!.account, id);
      const f = first.get(key);
      if (f === undefined) first.set(key, k);
      else (again.get(key) ?? again.set(key, [f]).get(key)!).push(k);
    }
  });
  first.clear();
  if (again.size === 0) return none;
  const extractedAt = (k: number) => Number(files[k]!.extracted_at);
  const dups = [...again].map(([key, ks]) => {
    let win = ks[0]!;
    for (const k of ks) if (extractedAt(k) > extractedAt(win) || (extractedAt(k) === extractedAt(win) && k > win)) win = k;
    return { key, k: win, ks };
  });
  const parts = dups.map((d) => ({ account: d.key.slice(0, d.key.indexOf('\u0000')), id: d.key.slice(d.key.indexOf('\u0000') + 1) }));
  await c.run(
    'CREATE OR REPLACE TEMP TABLE _dups AS SELECT unnest($1::VARCHAR[]) AS session_id, unnest($2::INTEGER[]) AS k, unnest($3::VARCHAR[]) AS account',
    [listValue(parts.map((p) => p.id)), listValue(dups.map((d) => d.k)), listValue(parts.map((p) => p.account))],
  );
  const counts = new Map<number, number>();
  const ids = new Map<number, Set<string>>();
  for (const d of dups) {
    for (const k of d.ks.filter((x) => x !== d.k)) {
      counts.set(k, (counts.get(k) ?? 0) + 1);
      (ids.get(k) ?? ids.set(k, new Set()).get(k)!).add(d.key);
    }
  }
  return { any: true, count: (k) => counts.get(k) ?? 0, idsIn: (k) => ids.get(k) ?? new Set() };
}

/** Most rows a merge that does not align (the flush's) takes: mergeRows and a vector. */
function sliceRows(ctx: MergeContext): number {
  return mergeRows(ctx.rowGroupRows) + VECTOR_ROWS;
}

/** Where the table's groups of rowGroupRows begin: after the last group if it is full already (larger), else at its start. */
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

/** A pending file's session ids: read ahead, or read now and kept in ctx.ids for the next slice. */
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
 * Starts reading the ids of about a slice of `files` into ctx.ids, one file at a time (the reads add
 * to the merge's memory). A read that fails is forgotten: the merge reads the file and reports then.
 */
function prefetchIds(ctx: MergeContext, files: ReadonlyArray<{ file: string; rows: bigint | number }>): void {
  const cache = ctx.ids;
  if (!cache) return;
  let rows = 0;
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
 * The session id of the record in bytes [from, to): records start with it (sessions-body.ts keeps
 * the field order); one with an escape or non-ASCII byte, or not starting so, is parsed whole.
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
