/**
 * A debug hook (issue 39): with SESSION_ETL_MEMORY_TRACE=<file> the process appends one JSON line a second (or every
 * SESSION_ETL_MEMORY_TRACE_MS) to <file>, synchronously so the lines survive an OOM kill: Node's, the kernel's and
 * DuckDB's view of memory, and the `traced` counters. Off (no timer, no connection) without the variable.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';

const PATH = process.env.SESSION_ETL_MEMORY_TRACE || undefined;
export const memoryTraceOn = PATH !== undefined;

/** Counters the transport, the window loader and the table's merges keep while the trace is on (*Bytes written in MiB). */
export const traced = { requests: 0, requestBytes: 0, answers: 0, answerBytes: 0, commits: 0, unmergedRows: 0 };

const instances = new Map<DuckDBInstance, Promise<DuckDBConnection | undefined>>();
let timer: NodeJS.Timeout | undefined;
const t0 = Date.now();

/** Samples `instance`'s pool on a connection of `connect` (a writer's passes its gate); call the result before closing it. */
export function traceInstance(instance: DuckDBInstance, connect: () => Promise<DuckDBConnection> = () => instance.connect()): () => void {
  if (!memoryTraceOn) return () => {};
  instances.set(instance, connect().catch(() => undefined));
  start();
  return () => {
    const c = instances.get(instance);
    instances.delete(instance);
    // Closed before the instance; a sample still running on it just fails.
    void c?.then((conn) => conn?.closeSync());
  };
}

function start(): void {
  if (timer || !PATH) return;
  timer = setInterval(() => void sample(), intervalMs());
  timer.unref();
}

/** SESSION_ETL_MEMORY_TRACE_MS: whole milliseconds, 10 or more; anything else is said on stderr and the trace samples every second. */
function intervalMs(): number {
  const text = process.env.SESSION_ETL_MEMORY_TRACE_MS;
  if (text === undefined || text === '') return 1000;
  const ms = Number(text);
  if (Number.isInteger(ms) && ms >= 10) return ms;
  process.stderr.write(`SESSION_ETL_MEMORY_TRACE_MS=${JSON.stringify(text)} is not a whole number of milliseconds, 10 or more: the memory trace samples every 1000 ms\n`);
  return 1000;
}

function status(): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const line of readFileSync('/proc/self/status', 'utf8').split('\n')) {
      const m = /^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem):\s+(\d+) kB/.exec(line);
      if (m) out[m[1]!] = Math.round(Number(m[2]) / 1024);
    }
  } catch {
    // not Linux
  }
  return out;
}

let busy = false;
async function sample(): Promise<void> {
  if (busy || !PATH) return;
  busy = true;
  try {
    const MiB = 2 ** 20;
    const m = process.memoryUsage();
    let pool = 0;
    let temp = 0;
    const limits: string[] = [];
    const tags: Record<string, number> = {};
    for (const c of instances.values()) {
      const conn = await c;
      if (!conn) continue;
      try {
        const r = await conn.runAndReadAll("SELECT tag, memory_usage_bytes, temporary_storage_bytes, current_setting('memory_limit') FROM duckdb_memory()");
        for (const [tag, used, tmp, limit] of r.getRows()) {
          pool += Number(used);
          temp += Number(tmp);
          if (Number(used) > 0) tags[String(tag)] = (tags[String(tag)] ?? 0) + Math.round(Number(used) / MiB);
          if (!limits.includes(String(limit))) limits.push(String(limit));
        }
      } catch {
        // the instance closed meanwhile
      }
    }
    const line = {
      s: Math.round((Date.now() - t0) / 100) / 10,
      t: Date.now(),
      ...Object.fromEntries((['rss', 'heapUsed', 'heapTotal', 'external', 'arrayBuffers'] as const).map((k) => [k, Math.round(m[k] / MiB)])),
      ...status(),
      duckdbInstances: instances.size,
      duckdbPool: Math.round(pool / MiB),
      duckdbTemp: Math.round(temp / MiB),
      duckdbTags: tags,
      memoryLimit: limits.join(' / '),
      ...Object.fromEntries(Object.entries(traced).map(([k, v]) => [k, k.endsWith('Bytes') ? Math.round(v / MiB) : v])),
    };
    appendFileSync(PATH, `${JSON.stringify(line)}\n`);
  } catch {
    // a debug hook never fails the run
  } finally {
    busy = false;
  }
}
