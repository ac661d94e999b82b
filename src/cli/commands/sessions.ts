import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { loadConfig } from '../../config/load.js';
import { UsageError } from '../usage-error.js';

interface SessionsFlags {
  dataDir?: string;
  config?: string;
  filter?: string;
  ascending?: string;
  descending?: string;
  sort?: string;
  attributeNames?: string;
  fromDate?: string;
  from?: string;
  toDate?: string;
  to?: string;
  pageSize?: string;
  offset?: string;
  page?: string;
  size?: string;
  format?: string;
  source?: string;
}

export function register(program: Command): void {
  program
    .command('sessions')
    .description(
      'Query the exported sessions with the vendor\'s list conventions (filter, ascending/sort, pageSize/offset or page/size, attributeNames); `sessions get <id>` for one. Read-only',
    )
    .argument('[get]', '`get` to show one session')
    .argument('[id]', 'session id (with get)')
    .option('--data-dir <dir>', 'data directory; also SESSION_ETL_DATA_DIR (default ./data)')
    .option('--config <file>', 'configuration file')
    .option('--filter <expr>', 'e.g. agent.email=".*@example\\.com" & recording="true"')
    .option('--ascending <pairs>', 'field=true|false,… (true ascending, false descending), in order of sorting')
    .option('--descending <fields>', 'fields to sort descending, or true to reverse the order')
    .option('--sort <spec>', 'field asc,field (another spelling of the sort)')
    .option('--attributeNames <fields>', 'fields to return, e.g. id,agent.name,started')
    .option('--fromDate <time>', 'sessions started at or after (2026-01-01, ISO datetime, epoch seconds)')
    .option('--from <time>', 'same as --fromDate')
    .option('--toDate <time>', 'sessions started before')
    .option('--to <time>', 'same as --toDate')
    .option('--pageSize <n>', 'items per page (default 100)')
    .option('--offset <n>', 'zero-based position of the first item (default 0)')
    .option('--page <n>', 'page number (page/size paging, hypermedia-style answer)')
    .option('--size <n>', 'page size (page/size paging)')
    .addOption(new Option('--format <format>', 'output (default: table on a terminal, json otherwise)').choices(['table', 'json', 'csv', 'ndjson']))
    .addOption(new Option('--source <source>', 'read the DuckDB table or the Parquet dataset (default: DuckDB when present)').choices(['duckdb', 'parquet']))
    .action(async (get: string | undefined, id: string | undefined, flags: SessionsFlags) => {
      const { config } = loadConfig({ ...(flags.config ? { configFile: flags.config } : {}), flags: { dataDir: flags.dataDir } });
      const list = await import('../../list/index.js');
      const params: Record<string, string | undefined> = {
        filter: flags.filter,
        ascending: flags.ascending,
        descending: flags.descending,
        sort: flags.sort,
        attributeNames: flags.attributeNames,
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
      let req;
      try {
        req = list.parseListRequest(params);
      } catch (err) {
        if (list.isListSyntaxError(err)) throw new UsageError(err.message);
        throw err;
      }
      if (req.unknownFields?.length) {
        process.stderr.write(`warning: no session field is called ${req.unknownFields.join(', ')} (treated as null / empty)\n`);
      }

      const { openDb } = await import('../../store/duckdb.js');
      const dbFile = join(config.dataDir, 'sessions.duckdb');
      const parquetDir = join(config.dataDir, 'parquet', 'sessions');
      let useDuck = flags.source ? flags.source === 'duckdb' : existsSync(dbFile);
      if (useDuck && !existsSync(dbFile)) throw new UsageError(`no DuckDB file at ${dbFile}: run a backfill or export first, or use --source parquet`);
      if (!useDuck && !existsSync(parquetDir)) throw new UsageError(`no sessions in ${config.dataDir}: run a backfill or export first`);
      let db;
      try {
        db = useDuck ? await openDb(dbFile, { readOnly: true }) : await openDb(':memory:');
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
        db = await openDb(':memory:');
      }
      let page;
      try {
        page = await list.queryDuckDb(
          db.conn,
          req,
          useDuck ? { table: 'sessions' } : { parquetGlob: join(parquetDir, '**', '*.parquet') },
        );
      } finally {
        db.close();
      }
      if (get !== undefined) {
        const one = page.items[0];
        if (!one) {
          process.stderr.write(`no session with id ${id}\n`);
          process.exitCode = 1;
          return;
        }
        process.stdout.write(JSON.stringify(one, null, 2) + '\n');
        return;
      }
      const format = flags.format ?? (process.stdout.isTTY ? 'table' : 'json');
      const out = process.stdout;
      if (format === 'json') {
        const body = page.paging.kind === 'page' ? list.toPageResponse(page, { baseHref: 'session-etl:sessions' }) : page;
        out.write(JSON.stringify(body, null, 2) + '\n');
      } else if (format === 'ndjson') {
        for (const item of page.items) out.write(JSON.stringify(item) + '\n');
      } else {
        const rows = page.items.map((i) => flattenView(i));
        const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
        if (format === 'csv') {
          out.write(cols.map(csvCell).join(',') + '\n');
          for (const r of rows) out.write(cols.map((c) => csvCell(r[c])).join(',') + '\n');
        } else {
          out.write(renderTable(cols, rows));
          out.write(`${page.items.length} of ${page.total} sessions (offset ${page.offset})\n`);
        }
      }
    });
}

function flattenView(v: Record<string, unknown>, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
  for (const [k, val] of Object.entries(v)) {
    if (val && typeof val === 'object' && !Array.isArray(val)) flattenView(val as Record<string, unknown>, `${prefix}${k}.`, out);
    else out[`${prefix}${k}`] = val;
  }
  return out;
}

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function renderTable(cols: string[], rows: Record<string, unknown>[]): string {
  const cell = (v: unknown) => {
    const s = v === null || v === undefined ? '' : String(v).replace(/\s+/g, ' ');
    return s.length > 40 ? s.slice(0, 39) + '…' : s;
  };
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd() + '\n';
  return line(cols) + line(widths.map((w) => '-'.repeat(w))) + rows.map((r) => line(cols.map((c) => cell(r[c])))).join('');
}
