/**
 * The public column contract of the `sessions` table and of the Parquet dataset.
 * BI dashboards are built on these names: change them only with a migration and a note in the README.
 */
export interface ContractColumn {
  /** Column name in DuckDB and Parquet. */
  readonly name: string;
  /** DuckDB type. */
  readonly type: 'VARCHAR' | 'TIMESTAMPTZ' | 'BIGINT' | 'BOOLEAN';
  /** Where the value comes from in the reporting record (dot path), or `lineage`. */
  readonly source: string;
  readonly description: string;
}

export const SESSION_COLUMNS: readonly ContractColumn[] = [
  { name: 'session_id', type: 'VARCHAR', source: 'id', description: 'Session identifier (UUID); one row per session.' },
  { name: 'company_id', type: 'VARCHAR', source: 'companyId', description: 'Owning company identifier.' },
  { name: 'pin', type: 'VARCHAR', source: 'pin', description: 'Session PIN, leading zeros kept.' },
  { name: 'started_at', type: 'TIMESTAMPTZ', source: 'started', description: 'Start instant (UTC).' },
  { name: 'ended_at', type: 'TIMESTAMPTZ', source: 'ended', description: 'End instant (UTC); null while the session runs.' },
  { name: 'duration_seconds', type: 'BIGINT', source: 'duration', description: 'Duration in seconds; null while the session runs.' },
  { name: 'session_type', type: 'VARCHAR', source: 'sessionType', description: 'Session kind label as the server sends it.' },
  { name: 'recording', type: 'BOOLEAN', source: 'recording', description: 'Whether the session was recorded.' },
  { name: 'recording_url', type: 'VARCHAR', source: 'recordingUrl', description: 'Recording address, when recorded.' },
  { name: 'agent_id', type: 'VARCHAR', source: 'agent.id', description: 'Agent identifier; null when the record has no agent.' },
  { name: 'agent_name', type: 'VARCHAR', source: 'agent.name', description: 'Agent display name.' },
  { name: 'agent_email', type: 'VARCHAR', source: 'agent.email', description: 'Agent e-mail address.' },
  { name: 'agent_group_id', type: 'BIGINT', source: 'agentGroupId', description: 'Agent group identifier.' },
  { name: 'agent_ip', type: 'VARCHAR', source: 'agentIp', description: 'Agent network address.' },
  { name: 'customer_ip', type: 'VARCHAR', source: 'customerIp', description: 'Customer network address.' },
  { name: 'external_customer_name', type: 'VARCHAR', source: 'externalFields.customerName', description: 'Case field: customer name.' },
  { name: 'external_case_id', type: 'VARCHAR', source: 'externalFields.externalCaseId', description: 'Case field: external case id.' },
  { name: 'external_notes', type: 'VARCHAR', source: 'externalFields.notes', description: 'Case field: notes.' },
  { name: 'external_accounting_info', type: 'VARCHAR', source: 'externalFields.accountingInfo', description: 'Case field: accounting info.' },
  { name: 'external_customer_device_type', type: 'VARCHAR', source: 'externalFields.customerDeviceType', description: 'Case field: customer device type.' },
  { name: 'external_customer_os', type: 'VARCHAR', source: 'externalFields.customerOs', description: 'Case field: customer operating system.' },
  { name: 'extracted_at', type: 'TIMESTAMPTZ', source: 'lineage', description: 'When this version of the record was fetched (UTC).' },
];

/**
 * `CREATE TABLE` statement for the contract, used for the sessions table and its staging twins.
 * No PRIMARY KEY index: one row per session is kept by the merge (store/session-store.ts), which is
 * the only writer of the table; an index would make every merge after the first one cost
 * microseconds per row (docs/benchmarks.md).
 */
export function sessionsTableDdl(table = 'sessions'): string {
  const cols = SESSION_COLUMNS.map((c) => `  ${c.name} ${c.type}${c.name === 'session_id' ? ' NOT NULL' : ''}`);
  return `CREATE TABLE IF NOT EXISTS ${table} (\n${cols.join(',\n')}\n)`;
}
