import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { loadConfig } from '../../config/load.js';
import { asUsage, UsageError } from '../usage-error.js';
import { outputStillRead } from '../epipe.js';
import { chosenAccounts, collect } from '../account-options.js';
import { sessionsCsv } from '../../util/csv-cell.js';
import { oneLine } from '../../util/terminal-text.js';
import { didYouMean } from '../../util/did-you-mean.js';
import { displayWidth, padToWidth, truncateToWidth } from '../display-width.js';
import type { ListRequest } from '../../list/index.js';
import { filterFieldRefs } from '../../list/parse-filter.js';
import { isoOf } from '../../time/windows.js';
import { ACCOUNT_COLUMN } from '../../list/compile-to-sql.js';
import type { DuckDBValue } from '@duckdb/node-api';

/** Every flag but --account (repeatable) is one string. */
type SessionsFlags = { account?: string[] } & Partial<Record<
  | 'dataDir' | 'config' | 'filter' | 'ascending' | 'descending' | 'sort' | 'attributeNames' | 'columns' | 'fromDate' | 'from' | 'toDate' | 'to'
  | 'pageSize' | 'offset' | 'page' | 'size' | 'output' | 'format' | 'source' | 'parquetUrl',
  string
>>;

export function register(program: Command): void {
  program
    .command('sessions')
    .description(
      'Query the exported sessions with the vendor\'s list conventions (filter, ascending/sort, pageSize/offset or page/size, attributeNames); `sessions get <id>` for one. Read-only. ' +
        'The vendor\'s camelCase spellings (--pageSize, --attributeNames, --fromDate, --toDate) are accepted too',
    )
    .argument('[get]', '`get` to show one session')
    .argument('[id]', 'session id (with get)')
    .option('--data-dir <dir>', 'data directory; also SESSION_ETL_DATA_DIR (default ./data)')
    .option('--parquet-url <s3-url>', 'the dataset is in a bucket (s3://BUCKET/PREFIX): --source parquet reads a local copy of it, brought up to date; also SESSION_ETL_PARQUET_URL')
    .option('--config <file>', 'configuration file')
    .option('--filter <expr>', 'e.g. agent.email=".*@example\\.com" & recording="true"')
    .option('--ascending <pairs>', 'field=true|false,… (true ascending, false descending), in order of sorting')
    .option('--descending <fields>', 'fields to sort descending, or true to reverse the order')
    .option('--sort <spec>', 'field asc,field (another spelling of the sort)')
    .option('--attribute-names <fields>', 'fields to return, in this order, e.g. id,agent.name,started')
    .option('--columns <fields>', `the table's columns (the same as --attribute-names; \`all\` for every field; default ${TABLE_COLUMNS.join(',')}, account first when reading many accounts)`)
    .option('--from <time>', 'sessions started at or after (2026-01-01, ISO datetime, epoch seconds); also --from-date')
    .option('--to <time>', 'sessions started before; also --to-date')
    .option('--page-size <n>', 'items per page (default 100)')
    .option('--offset <n>', 'zero-based position of the first item (default 0)')
    .option('--page <n>', 'page number (page/size paging, hypermedia-style answer)')
    .option('--size <n>', 'page size (page/size paging)')
    .addOption(new Option('--output <format>', 'output format (default: table on a terminal, json otherwise)').choices(OUTPUTS))
    .addOption(new Option('--format <format>', 'deprecated spelling of --output (elsewhere --format is the storage format)').choices(OUTPUTS))
    .addOption(new Option('--source <source>', 'read the DuckDB table or the Parquet dataset (default: DuckDB when present)').choices(['duckdb', 'parquet']))
    // Hidden spellings: the vendor's camelCase parameter names, and --from-date / --to-date.
    .addOption(new Option('--attributeNames <fields>').hideHelp())
    .addOption(new Option('--pageSize <n>').hideHelp())
    .addOption(new Option('--from-date <time>').hideHelp())
    .addOption(new Option('--fromDate <time>').hideHelp())
    .addOption(new Option('--to-date <time>').hideHelp())
    .addOption(new Option('--toDate <time>').hideHelp())
    .option('--account <name>', 'with an accounts map: this account only (default: the whole dataset, every account)', collect)
    .action(async (get: string | undefined, id: string | undefined, flags: SessionsFlags) => {
      const loaded = loadConfig({ ...(flags.config ? { configFile: flags.config } : {}), flags: { dataDir: flags.dataDir, parquetUrl: flags.parquetUrl } });
      const { config } = loaded;
      const accounts = chosenAccounts(loaded, { ...(flags.account ? { account: flags.account } : {}) });
      if (accounts && (flags.account?.length ?? 0) > 1) throw new UsageError('sessions reads one account (--account NAME) or, without --account, every account');
      const list = await import('../../list/index.js');
      if (flags.output && flags.format && flags.output !== flags.format) {
        throw new UsageError(`--output ${flags.output} and --format ${flags.format} disagree: give --output only (--format is its old spelling)`);
      }
      if (flags.columns !== undefined && flags.attributeNames !== undefined && flags.columns !== flags.attributeNames) {
        throw new UsageError('--columns and --attribute-names are the same setting: give one of them');
      }
      const columns = flags.columns ?? flags.attributeNames;
      // With accounts and no --account, the whole dataset: each session says its account.
      const withAccount = accounts !== null && !flags.account?.length;
      const params: Record<string, string | undefined> = {
        filter: flags.filter,
        ascending: flags.ascending,
        descending: flags.descending,
        sort: flags.sort,
        // `account` is no session field: asked of the store (withAccount), not of the list.
        attributeNames:
          columns === 'all'
            ? undefined
            : withAccount && columns !== undefined
              ? columns.split(',').filter((n) => n.trim() !== ACCOUNT_COLUMN).join(',') || undefined
              : columns,
        fromDate: flags.fromDate ?? flags.from,
        toDate: flags.toDate ?? flags.to,
        pageSize: flags.pageSize,
        offset: flags.offset,
        page: flags.page,
        size: flags.size,
      };
      if (get !== undefined) {
        if (get !== 'get' || !id) throw new UsageError('usage: session-etl sessions get <id>   (or: session-etl sessions [--filter …])');
        if (/"/.test(id)) throw new UsageError('a session id cannot contain a double quote');
        params.filter = `id="${id.replace(/[\\.^$|?*+()[\]{}]/g, '\\$&')}"`;
        params.pageSize = '1';
      }
      const req = asUsage(() => list.parseListRequest(params), list.isListSyntaxError);
      // A name no session field has counts as null (docs/list-conventions.md): in a filter or sort that
      // is a typo that would print nothing or drop the order with exit 0, so a usage error naming the fields.
      refuseUnknownFields(req, params, list.knownFieldNames());
      // Asked for, it is an empty column (the documented shape), with a warning.
      for (const name of req.unknownFields ?? []) {
        process.stderr.write(`warning: no session field is called ${name}${didYouMean(name, list.knownFieldNames())}: it counts as null (an empty column when asked for)\n`);
      }
      const format = flags.output ?? flags.format ?? (process.stdout.isTTY ? 'table' : 'json');
      // CSV and NDJSON are for files and pipes: every match unless a page is asked for.
      const everything = (format === 'csv' || format === 'ndjson') && get === undefined && [params.pageSize, params.page, params.size].every((v) => v === undefined);

      const { openDb } = await import('../../store/duckdb.js');
      const one = accounts && flags.account?.length ? flags.account[0]! : undefined;
      // With accounts: the store that holds the account (or, not sharded, every account), filtered by account.
      let dbFile = join(config.dataDir, 'sessions.duckdb');
      if (accounts) {
        const { shardCount, storeFor } = await import('../../accounts/stores.js');
        const { layoutOf } = await import('../../store/layout.js');
        const count = await shardCount(config.dataDir);
        const store = one !== undefined ? storeFor(one, count) : undefined;
        dbFile = one !== undefined || count === 1 ? layoutOf(config.dataDir, 'both', store).dbPath : '';
      }
      let parquetDir = join(config.dataDir, 'parquet', 'sessions');
      if (config.parquetUrl && (flags.source === 'parquet' || !(dbFile !== '' && existsSync(dbFile)))) {
        // A bucket: read a local copy of the dataset, brought up to date first (only what changed is downloaded).
        const { parseParquetUrl } = await import('../../store/dataset/location.js');
        const { bucketCacheDir, mirrorDataset } = await import('../../store/dataset/bucket-reader.js');
        const location = parseParquetUrl(config.parquetUrl, config.s3PathStyle) as Extract<ReturnType<typeof parseParquetUrl>, { kind: 's3' }>;
        parquetDir = join(bucketCacheDir(config.dataDir), 'dataset');
        await mirrorDataset(location, parquetDir);
      }
      const filter = one !== undefined ? { account: one } : withAccount ? { withAccount: true } : {};
      let useDuck = flags.source ? flags.source === 'duckdb' : dbFile !== '' && existsSync(dbFile);
      if (useDuck && dbFile === '') throw new UsageError('the accounts are sharded (one DuckDB file per shard): give --account NAME, or read the dataset with --source parquet');
      if (useDuck && !existsSync(dbFile)) throw new UsageError(`no DuckDB file at ${dbFile}: run a backfill or export first, or use --source parquet`);
      if (!useDuck && !existsSync(parquetDir)) throw new UsageError(`no sessions in ${config.dataDir}: run a backfill or export first`);
      let db;
      try {
        db = useDuck ? await openDb(dbFile, { readOnly: true, allowedDirectories: [config.dataDir, parquetDir] }) : await openDb(':memory:', { allowedDirectories: [parquetDir] });
      } catch (err) {
        // A run holds the DuckDB file (DuckDB lets no other process open it meanwhile).
        if (!/Could not set lock|Conflicting lock/i.test(String((err as Error)?.message))) throw err;
        const who = /\(PID (\d+)\)/.exec(String((err as Error).message))?.[1];
        const held = `${dbFile} is held by a session-etl run${who ? ` (pid ${who})` : ''} while it writes`;
        if (flags.source || !existsSync(parquetDir)) {
          const { StoreBusyError } = await import('../../store/errors.js');
          throw new StoreBusyError(
            `${held}: ${existsSync(parquetDir) ? 'read the Parquet dataset meanwhile with --source parquet, or ' : ''}try again when the run has finished (see session-etl status)`,
            { cause: err },
          );
        }
        process.stderr.write(`note: ${held}; reading the Parquet dataset instead (as of its last rewrite during the run)\n`);
        useDuck = false;
        db = await openDb(':memory:', { allowedDirectories: [parquetDir] });
      }
      // The fields asked for, in their order; reading many accounts, the account first unless placed.
      const asked = requestedFields(columns === 'all' ? undefined : columns, list);
      if (asked && withAccount && !asked.includes(ACCOUNT_COLUMN)) asked.unshift(ACCOUNT_COLUMN);
      const source = useDuck ? { table: 'sessions', ...filter } : { parquetGlob: join(parquetDir, '**', '*.parquet'), ...filter };
      let page;
      try {
        if (everything) return await writeEveryMatch(db.conn, list, req, source, format, asked, withAccount);
        page = await list.queryDuckDb(db.conn, req, source);
      } finally {
        db.close();
      }
      if (get !== undefined) {
        if (page.items[0]) return void process.stdout.write(JSON.stringify(page.items[0], null, 2) + '\n');
        process.stderr.write(`no session with id ${id}\n`);
        process.exitCode = 1;
        return;
      }
      const out = process.stdout;
      // The library returns fields in interface order; the user sees them in the order asked for.
      if (asked) page = { ...page, items: page.items.map((i) => inOrder(i, asked)) };
      if (format === 'json') {
        const body = page.paging.kind === 'page' ? list.toPageResponse(page, { baseHref: 'session-etl:sessions' }) : page;
        out.write(JSON.stringify(body, null, 2) + '\n');
      } else if (format === 'ndjson') {
        for (const item of page.items) out.write(JSON.stringify(item) + '\n');
        if (await outputStillRead(out)) noteCut(page);
      } else {
        const rows = page.items.map((i) => flattenView(i));
        // A person's table: a few columns that fit a terminal unless --columns asks for others.
        const cols = asked ?? [...(withAccount ? [ACCOUNT_COLUMN] : []), ...(format === 'table' && columns !== 'all' ? TABLE_COLUMNS : leafPaths(list))];
        if (format === 'csv') {
          const csv = csvOf(list, cols);
          out.write(csv.header);
          for (const r of rows) out.write(csv.row(cols.map((c) => r[c])));
          if (await outputStillRead(out)) noteCut(page);
        } else if (page.total === 0) {
          out.write(`no sessions match${whyNone(req)}\n`);
        } else {
          // For a person: times as ISO 8601 UTC instead of epoch seconds.
          for (const r of rows) for (const c of cols) if (list.resolveField(c)?.kind === 'epoch' && typeof r[c] === 'number') r[c] = isoOf(r[c]);
          let table = renderTable(cols, rows);
          // The default columns on a narrow terminal: the last ones give way (never id or account), and it says so.
          const width = out === process.stdout && process.stdout.isTTY ? process.stdout.columns : undefined;
          const shown = [...cols];
          while (!asked && width && shown.length > 2 && displayWidth(table.slice(0, table.indexOf('\n'))) > width) {
            shown.pop();
            table = renderTable(shown, rows);
          }
          out.write(table);
          const left = cols.length - shown.length;
          out.write(`${page.items.length} of ${page.total} sessions (offset ${page.offset})${left ? `; ${left} column(s) left out to fit the terminal` : ''}${asked ? '' : '; --columns to choose (all: every field)'}\n`);
        }
      }
    });
}

const OUTPUTS = ['table', 'json', 'csv', 'ndjson'];

/** The table's columns without --columns: narrow enough for a terminal. */
const TABLE_COLUMNS = ['id', 'started', 'ended', 'duration', 'sessionType', 'agent.name'];

type ListModule = typeof import('../../list/index.js');

/**
 * CSV or NDJSON of every match, streamed chunk by chunk in one query (paging with OFFSET sorted the
 * whole result once a page). A reader that went away (`| head`) ends it; a slow one is waited for.
 */
async function writeEveryMatch(
  conn: Parameters<ListModule['queryDuckDb']>[0],
  list: ListModule,
  req: ListRequest,
  source: Parameters<ListModule['queryDuckDb']>[2],
  format: string,
  asked: string[] | undefined,
  withAccount: boolean,
): Promise<void> {
  const { shapeRecord } = await import('../../list/list-request.js');
  const out = process.stdout;
  const cols = asked ?? [...(withAccount ? [ACCOUNT_COLUMN] : []), ...leafPaths(list)];
  const csv = csvOf(list, cols);
  if (format === 'csv') out.write(csv.header);
  const compiled = list.compileToSql(req, source);
  const offset = req.paging.kind === 'offset' ? req.paging.offset : 0;
  const result = await conn.stream(compiled.sql, [...(compiled.params as DuckDBValue[]), Number.MAX_SAFE_INTEGER, offset]);
  for await (const rows of result.yieldRowObjectJs()) {
    for (const row of rows) {
      // As queryDuckDb shapes its records: BIGINT as a number, absent as null.
      const view = {
        ...(withAccount ? { [ACCOUNT_COLUMN]: row[ACCOUNT_COLUMN] ?? null } : {}),
        ...shapeRecord(compiled.leaves, (leaf) => (typeof row[leaf.path] === 'bigint' ? Number(row[leaf.path]) : (row[leaf.path] ?? null))),
      };
      const item = asked ? inOrder(view, asked) : view;
      if (format === 'csv') {
        const r = flattenView(item);
        out.write(csv.row(cols.map((c) => r[c])));
      } else out.write(JSON.stringify(item) + '\n');
    }
    if (out.destroyed) return;
    if (out.writableNeedDrain) {
      await new Promise<void>((resolve) => {
        const done = () => {
          out.off('drain', done);
          out.off('close', done);
          resolve();
        };
        out.on('drain', done);
        out.on('close', done);
      });
    }
  }
}

/** The CSV writer of `cols`: the dashboard download's dialect (util/csv-cell.ts). */
function csvOf(list: ListModule, cols: string[]): ReturnType<typeof sessionsCsv> {
  return sessionsCsv(cols, cols.map((c) => list.resolveField(c)?.kind === 'epoch'));
}

/** On stderr, when a page of CSV or NDJSON left matches out: a file's reader would not know. */
function noteCut(page: { items: unknown[]; total: number; offset: number }): void {
  if (page.items.length < page.total) {
    process.stderr.write(
      `note: wrote ${page.items.length} of ${page.total} matching sessions (offset ${page.offset}): a page, as asked; ` +
        'without --page-size (and --page, --size) csv and ndjson hold every match\n',
    );
  }
}

function whyNone(req: ListRequest): string {
  const from = req.startedFrom;
  return from !== null && from > Date.now() / 1000 ? ` (--from ${isoOf(from)} is in the future)` : '';
}

/** Every field's path in interface order. */
function leafPaths(list: ListModule): string[] {
  return list.knownFieldNames().flatMap((n) => {
    const f = list.resolveField(n);
    return f && f.kind !== 'object' && f.path === n ? [n] : [];
  });
}

/** The fields --attribute-names asks for, in its order (an object field: its fields; an unknown name: kept, as null). */
function requestedFields(attributeNames: string | undefined, list: ListModule): string[] | undefined {
  if (attributeNames === undefined || attributeNames.trim() === '') return undefined;
  const out: string[] = [];
  for (const raw of list.percentDecode(attributeNames).value.split(',')) {
    const name = raw.trim();
    const f = list.resolveField(name);
    const paths = f ? (f.kind === 'object' ? f.children.map((c) => c.path) : [f.path]) : [name];
    for (const p of paths) if (!out.includes(p)) out.push(p);
  }
  return out;
}

/** The record with its keys in the asked order (an object where its first field was asked, its fields in asked order). */
function inOrder(view: Record<string, unknown>, paths: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of paths) {
    const dot = p.indexOf('.');
    if (dot < 0) {
      out[p] = p in view ? view[p] : null;
      continue;
    }
    const parent = p.slice(0, dot);
    const src = view[parent] as Record<string, unknown> | undefined;
    if (parent in view && (!src || typeof src !== 'object')) {
      if (!(parent in out)) out[parent] = view[parent];
      continue;
    }
    const obj = (out[parent] ??= {}) as Record<string, unknown>;
    obj[p.slice(dot + 1)] = src?.[p.slice(dot + 1)] ?? null;
  }
  return out;
}

function flattenView(v: Record<string, unknown>, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
  for (const [k, val] of Object.entries(v)) {
    if (val && typeof val === 'object' && !Array.isArray(val)) flattenView(val as Record<string, unknown>, `${prefix}${k}.`, out);
    else out[`${prefix}${k}`] = val;
  }
  return out;
}

export function renderTable(cols: string[], rows: Record<string, unknown>[]): string {
  const cell = (v: unknown) => {
    // A record's text is the server's (customer names, notes): no control sequence reaches the terminal.
    const s = v === null || v === undefined ? '' : oneLine(String(v).replace(/\s+/g, ' '));
    return truncateToWidth(s, 40);
  };
  // Columns by display width: a CJK character or an emoji takes two.
  const widths = cols.map((c) => Math.max(displayWidth(c), ...rows.map((r) => displayWidth(cell(r[c])))));
  const line = (vals: string[]) => vals.map((v, i) => padToWidth(v, widths[i]!)).join('  ').trimEnd() + '\n';
  return line(cols) + line(widths.map((w) => '-'.repeat(w))) + rows.map((r) => line(cols.map((c) => cell(r[c])))).join('');
}

/** A filter or sort naming no session field: exit 2, naming the flag, the nearest field and the fields. */
function refuseUnknownFields(req: ListRequest, params: Record<string, string | undefined>, known: readonly string[]): void {
  const fieldList = () => known.filter((n) => !n.includes('_')).join(', ');
  const inFilter = req.filter ? filterFieldRefs(req.filter).filter((r) => !r.field).map((r) => r.name) : [];
  const inSort = req.sort.filter((k) => !k.field).map((k) => k.name);
  const flagOf = (name: string) =>
    (['ascending', 'descending', 'sort'] as const).find((p) => params[p]?.includes(name)) ?? 'ascending';
  const bad = [
    ...new Set(inFilter.map((n) => `--filter: no session field is called ${n}${didYouMean(n, known)}`)),
    ...new Set(inSort.map((n) => `--${flagOf(n)}: no session field is called ${n}${didYouMean(n, known)}`)),
  ];
  if (bad.length) throw new UsageError(`${bad.join('\n')}\nthe session fields are: ${fieldList()} (docs/list-conventions.md)`);
}
