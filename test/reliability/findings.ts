/**
 * What the suite found, and how each was fixed: written into docs/reliability.md under the table.
 * Each entry names the row (area) whose checks caught it; those checks keep it fixed.
 */
import type { Finding } from './report.js';

export const FINDINGS: Finding[] = [
  {
    area: '4. bad input — environment',
    found: 'SESSION_ETL_DUCKDB_MEMORY_LIMIT=lots was refused clearly (exit 2), but only after the run had created the data directory for its lock.',
    fix: 'src/store/open-data-dir.ts (checkWriterSettings), called first by src/pipeline/run.ts: the setting is checked before anything is created.',
  },
  {
    area: '4. bad input — data directory',
    found: 'An existing data directory that is not writable ended with exit 1 and a raw "EPERM: operation not permitted, mkdir …/.session-etl.lock".',
    fix: 'src/store/lock.ts: EACCES, EPERM or EROFS while taking the lock is a DataDirError: exit 2, "data directory … is not writable".',
  },
  {
    area: '4. bad input — data directory',
    found: "A directory holding another program's DuckDB file, or a text or SQLite file named sessions.duckdb, was refused, but only after `.tmp/` had been created in it.",
    fix: 'src/store/open-data-dir.ts (openDataDir): the layout and the DuckDB file\'s owner are checked before anything is created.',
  },
  {
    area: '4. bad input — data directory',
    found: "`parquet` being a file of another program: the run created sessions.duckdb and .tmp/, committed, then failed at the Parquet rewrite (exit 1, ENOTDIR), or succeeded when no partition was touched.",
    fix: 'src/store/open-data-dir.ts (checkLayout): a file standing where a directory of ours goes (.tmp, pending, parquet, parquet/sessions) is refused first: exit 2, nothing written.',
  },
  {
    area: '4. bad input — data directory',
    found: 'An SQLite file named sessions.duckdb made DuckDB try to download the sqlite extension from extensions.duckdb.org ("Failed to download extension").',
    fix: 'src/store/duckdb.ts (openDb): extensions are never installed or loaded automatically; src/store/open-data-dir.ts: a file without the DuckDB magic is refused before DuckDB opens it ("not a DuckDB database at all: it starts with \"SQLite format 3…\"").',
  },
  {
    area: '4. bad input — data directory',
    found: '`session-etl demo --data-dir DIR` deleted DIR recursively, whatever it held (a project directory, a thesis), and also a directory a running job was writing.',
    fix: 'src/cli/commands/demo.ts: clears only a session-etl data directory (known entries, a DuckDB file that is ours), under the lock; anything else exits 2 (a busy one 3).',
  },
  {
    area: '1. crash anywhere — constructed states',
    found: 'A run killed while DuckDB was creating sessions.duckdb leaves an empty file, which DuckDB refuses ("not a valid DuckDB database file"): every later run would exit 2 until someone deleted it.',
    fix: 'src/store/open-data-dir.ts (openDataDir): an empty database file without a WAL holds nothing and is replaced.',
  },
  {
    area: '4. bad input — configuration file',
    found: 'A bad value in the configuration file was ignored when the environment or a flag set the same key (e.g. "format": "csv" with SESSION_ETL_FORMAT set): a broken file went unnoticed.',
    fix: 'src/config/load.ts: the file is validated on top of the defaults before the environment and the flags apply.',
  },
  {
    area: '4. bad input — numbers and durations',
    found: '`status --runs -1` and `--runs many` silently showed 10 runs.',
    fix: 'src/cli/commands/status.ts: exit 2, "--runs must be a positive whole number".',
  },
  {
    area: '3. bad responses',
    found: "A session id twice in one answer with different values, the second spelled with a JSON escape (\\u0032…): the body scanner compared raw bytes, so neither copy was rejected and one version was stored at random (documented: both invalid).",
    fix: 'src/reporting/sessions-body.ts: an id holding a backslash leaves the fast path; JSON.parse and the validator decide.',
  },
  {
    area: '3. bad responses',
    found: "Bytes that are not UTF-8 inside a string: the fast path handed them to DuckDB, whose JSON reader failed the commit (\"Malformed JSON in file …/.tmp/rows-….ndjson\"), in both policies; JSON.parse reads them as U+FFFD.",
    fix: 'src/reporting/sessions-body.ts: a body that is not valid UTF-8 (isUtf8) takes the slow path, as before the fast path existed.',
  },
  {
    area: '3. bad responses',
    found: 'A raw control character inside a string (invalid JSON): the fast path accepted it and the window failed at commit as a store write error naming an internal file.',
    fix: 'src/reporting/sessions-body.ts: any byte below 0x20 in the list takes the slow path: a bad body, retried, then "not complete JSON" naming the window.',
  },
  {
    area: '5. secrets',
    found: 'A server echoing the API key into a record that was then quarantined: the reason was redacted, the raw copy in rejected_sessions.raw was not — the key ended up in sessions.duckdb.',
    fix: 'src/store/commit-queue.ts: the raw record passes through redact() before it is stored.',
  },
  {
    area: '5. secrets',
    found: 'The same echoed key in an invalid field: the error quoted the value cut at 40 characters and only then redacted the message, so a cut key was no longer recognised and 36 of its 39 characters reached stderr, _runs.error and rejected_sessions.reason.',
    fix: 'src/reporting/record-schema.ts (describeValue): the value is redacted before it is cut short. The suite now also searches for secrets cut short.',
  },
  {
    area: '5. secrets (a failed re-run)',
    found: 'After a failed or stopped re-run of a completed backfill, the next run of the same command took the whole range as done ("nothing to fetch", exit 0 even with the endpoint unreachable): compacting the coverage stamped the merged rows with the compaction time, so older coverage looked like the failed run\'s work.',
    fix: 'src/store/coverage.ts (compactCoverage): a merged interval keeps the earliest commit time of its parts.',
  },
  {
    area: '6. concurrency',
    found: 'A lock directory without holder.json (a writer killed between mkdir and writing the file) made every run refuse with exit 3 for 60 s, naming nobody.',
    fix: 'src/store/lock.ts: the lock is prepared aside with its holder file and renamed into place, so it never exists without one; a lock with no readable holder is debris and is taken over at once; leftovers of killed writers are removed.',
  },
  {
    area: '4. bad input — full disk',
    found: 'A failed commit named its window in raw epoch seconds ("committing window 1792929600..1792951200").',
    fix: 'src/store/commit-queue.ts: the window is named as everywhere else (2026-10-20T06:00:00Z–2026-10-20T12:00:00Z).',
  },
  {
    area: '4. bad input — data directory (destructive)',
    found: 'Issue 13: with `.tmp` or `pending` a symbolic link to another directory, a backfill exited 0 having deleted every file in the target (the layout check followed links; cleanup removed recursively).',
    fix: 'src/store/layout.ts (refuseLinks), called before the lock and by SessionStore.open: a link inside the data directory is refused (exit 2, naming it); cleanup removes only regular files named as session-etl names them.',
  },
  {
    area: '4. bad input — data directory (destructive)',
    found: 'Issue 13: `demo` over a real export wiped it (exit 0), and deleted files of others inside parquet/ and pending/ of its own directory.',
    fix: 'src/cli/commands/demo.ts: only a directory it created (marker .session-etl-demo) or found empty is used; starting afresh deletes only known file names, and refuses if anything else is anywhere in it.',
  },
  {
    area: '4. bad input — data directory (destructive)',
    found: 'Issue 13: a backfill without --format over a --format parquet directory (so `both`) rewrote a partition from a new, nearly empty sessions table: 57 rows became 2, exit 0.',
    fix: 'src/store/schema.ts and open-data-dir.ts: the format is recorded in _session_etl_meta; unset, the directory\'s own is used; a different one asked for is refused (exit 2).',
  },
];
