/** Reads what a run stored, through readers independent of the writer's code path. */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import type { SessionRecord } from '../../src/schema/session-fields.js';

/** The row a record must become, per the column table (written out here, independently of flatten.ts). */
export function expectedRow(r: SessionRecord) {
  return {
    session_id: r.id,
    company_id: r.companyId ?? null,
    pin: r.pin ?? null,
    started_at: r.started ?? null,
    ended_at: r.ended ?? null,
    duration_seconds: r.duration ?? null,
    session_type: r.sessionType ?? null,
    recording: r.recording ?? null,
    recording_url: r.recordingUrl ?? null,
    agent_id: r.agent?.id ?? null,
    agent_name: r.agent?.name ?? null,
    agent_email: r.agent?.email ?? null,
    agent_group_id: r.agentGroupId ?? null,
    agent_ip: r.agentIp ?? null,
    customer_ip: r.customerIp ?? null,
    external_customer_name: r.externalFields?.customerName ?? null,
    external_case_id: r.externalFields?.externalCaseId ?? null,
    external_notes: r.externalFields?.notes ?? null,
    external_accounting_info: r.externalFields?.accountingInfo ?? null,
    external_customer_device_type: r.externalFields?.customerDeviceType ?? null,
    external_customer_os: r.externalFields?.customerOs ?? null,
  };
}
export type ExpectedRow = ReturnType<typeof expectedRow>;

/** Rows of the DuckDB sessions table, timestamps as epoch seconds, sorted by id. */
export async function readDuckDbSessions(dataDir: string): Promise<Array<ExpectedRow & { extracted_at: number }>> {
  const inst = await DuckDBInstance.create(join(dataDir, 'sessions.duckdb'), { access_mode: 'READ_ONLY' });
  const c = await inst.connect();
  try {
    const reader = await c.runAndReadAll(
      `SELECT * REPLACE (epoch(started_at)::BIGINT AS started_at, epoch(ended_at)::BIGINT AS ended_at, epoch(extracted_at) AS extracted_at)
       FROM sessions ORDER BY session_id`,
    );
    return reader.getRowObjectsJS().map((r) => normalise(r)) as Array<ExpectedRow & { extracted_at: number }>;
  } finally {
    c.closeSync();
    inst.closeSync();
  }
}

function normalise(r: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) out[k] = typeof v === 'bigint' ? Number(v) : v;
  return out;
}

export interface ParquetPartition {
  partition: string;
  file: string;
  rows: Array<Record<string, unknown>>;
  schema: ReturnType<typeof parquetSchema>;
}

/** Every partition of the Parquet dataset, read with hyparquet (not DuckDB). */
export async function readParquetDataset(dataDir: string): Promise<ParquetPartition[]> {
  const root = join(dataDir, 'parquet', 'sessions');
  const out: ParquetPartition[] = [];
  let dirs: string[] = [];
  try {
    dirs = (await readdir(root)).sort();
  } catch {
    return out;
  }
  for (const d of dirs) {
    const files = await readdir(join(root, d));
    for (const f of files) {
      const file = join(root, d, f);
      const buf = await asyncBufferFromFile(file);
      const metadata = await parquetMetadataAsync(buf);
      const rows = (await parquetReadObjects({ file: buf, metadata, compressors })) as Array<Record<string, unknown>>;
      out.push({ partition: d, file, rows, schema: parquetSchema(metadata) });
    }
  }
  return out;
}

/** Parquet rows in the test's comparable shape (timestamps → epoch seconds, bigint → number). */
export function parquetRowsComparable(parts: ParquetPartition[]): Array<Record<string, unknown>> {
  const rows = parts.flatMap((p) => p.rows);
  return rows
    .map((r) => {
      const o: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(r)) {
        if (v instanceof Date) o[k] = k === 'extracted_at' ? v.getTime() / 1000 : Math.round(v.getTime() / 1000);
        else o[k] = typeof v === 'bigint' ? Number(v) : v;
      }
      return o;
    })
    .sort((a, b) => String(a.session_id).localeCompare(String(b.session_id)));
}
