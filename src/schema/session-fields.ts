/**
 * The one table of a session's fields: the query, the zod schema, the body scanner, the record type,
 * the column contract, the NDJSON shape and the list conventions are derived from it. Adding a field is
 * one row (plus tests, the emulator's data and a docs/data.md note). Order is the column order (append
 * at the end of a group, never reorder) and the query's selection order, which the body scanner expects;
 * the fields of one object (`agent.*`, `externalFields.*`) must be next to each other.
 */

/** DuckDB type of the column. */
export type ColumnType = 'VARCHAR' | 'TIMESTAMPTZ' | 'BIGINT' | 'BOOLEAN';
/** JSON type of the value in the reporting record (timestamps arrive as epoch seconds, integers). */
export type JsonType = 'string' | 'integer' | 'boolean';

export interface FieldDef {
  /** Path in the GraphQL record: `started`, or `agent.email` for a field of an object. */
  readonly path: string;
  /** Column in the `sessions` table and the Parquet dataset (public: dashboards use it). */
  readonly column: string;
  readonly type: ColumnType;
  readonly json: JsonType;
  /** Whether it may be null or absent: all but the identity (`id`, a non-empty string, the table's key). */
  readonly nullable: boolean;
  /** The column's description in the contract. */
  readonly description: string;
}

export const SESSION_FIELDS = [
  { path: 'id', column: 'session_id', type: 'VARCHAR', json: 'string', nullable: false, description: 'Session identifier (UUID); one row per session.' },
  { path: 'companyId', column: 'company_id', type: 'VARCHAR', json: 'string', nullable: true, description: 'Owning company identifier.' },
  { path: 'pin', column: 'pin', type: 'VARCHAR', json: 'string', nullable: true, description: 'Session PIN, leading zeros kept.' },
  { path: 'started', column: 'started_at', type: 'TIMESTAMPTZ', json: 'integer', nullable: true, description: 'Start instant (UTC).' },
  { path: 'ended', column: 'ended_at', type: 'TIMESTAMPTZ', json: 'integer', nullable: true, description: 'End instant (UTC); null while the session runs.' },
  { path: 'duration', column: 'duration_seconds', type: 'BIGINT', json: 'integer', nullable: true, description: 'Duration in seconds; null while the session runs.' },
  { path: 'sessionType', column: 'session_type', type: 'VARCHAR', json: 'string', nullable: true, description: 'Session kind label as the server sends it.' },
  { path: 'recording', column: 'recording', type: 'BOOLEAN', json: 'boolean', nullable: true, description: 'Whether the session was recorded.' },
  { path: 'recordingUrl', column: 'recording_url', type: 'VARCHAR', json: 'string', nullable: true, description: 'Recording address, when recorded.' },
  { path: 'agent.id', column: 'agent_id', type: 'VARCHAR', json: 'string', nullable: true, description: 'Agent identifier; null when the record has no agent.' },
  { path: 'agent.name', column: 'agent_name', type: 'VARCHAR', json: 'string', nullable: true, description: 'Agent display name.' },
  { path: 'agent.email', column: 'agent_email', type: 'VARCHAR', json: 'string', nullable: true, description: 'Agent e-mail address.' },
  { path: 'agentGroupId', column: 'agent_group_id', type: 'BIGINT', json: 'integer', nullable: true, description: 'Agent group identifier.' },
  { path: 'agentIp', column: 'agent_ip', type: 'VARCHAR', json: 'string', nullable: true, description: 'Agent network address.' },
  { path: 'customerIp', column: 'customer_ip', type: 'VARCHAR', json: 'string', nullable: true, description: 'Customer network address.' },
  { path: 'externalFields.customerName', column: 'external_customer_name', type: 'VARCHAR', json: 'string', nullable: true, description: 'Case field: customer name.' },
  { path: 'externalFields.externalCaseId', column: 'external_case_id', type: 'VARCHAR', json: 'string', nullable: true, description: 'Case field: external case id.' },
  { path: 'externalFields.notes', column: 'external_notes', type: 'VARCHAR', json: 'string', nullable: true, description: 'Case field: notes.' },
  { path: 'externalFields.accountingInfo', column: 'external_accounting_info', type: 'VARCHAR', json: 'string', nullable: true, description: 'Case field: accounting info.' },
  { path: 'externalFields.customerDeviceType', column: 'external_customer_device_type', type: 'VARCHAR', json: 'string', nullable: true, description: 'Case field: customer device type.' },
  { path: 'externalFields.customerOs', column: 'external_customer_os', type: 'VARCHAR', json: 'string', nullable: true, description: 'Case field: customer operating system.' },
] as const satisfies readonly FieldDef[];

// ---- The record's TypeScript type, derived from the table ----

type Field = (typeof SESSION_FIELDS)[number];
type ValueOf<F extends FieldDef> = F['json'] extends 'string' ? string : F['json'] extends 'integer' ? number : boolean;
type TopField = Exclude<Field, { path: `${string}.${string}` }>;
type NestedField = Extract<Field, { path: `${string}.${string}` }>;
type ParentOf<P> = P extends `${infer H}.${string}` ? H : never;
type ChildOf<P> = P extends `${string}.${infer C}` ? C : never;
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/**
 * A session record as the reporting endpoint returns it (see the interface document, "Session"):
 * `id` always; every other field may be null or absent. `started` and `ended` are seconds since
 * the UNIX epoch (`ended` null while the session runs); `duration` is ended - started, in seconds.
 */
export type SessionRecord = Simplify<
  { [F in TopField as F['nullable'] extends false ? F['path'] : never]: ValueOf<F> } & {
    [F in TopField as F['nullable'] extends false ? never : F['path']]?: ValueOf<F> | null;
  } & {
    [H in ParentOf<NestedField['path']>]?: Simplify<{
      [F in Extract<NestedField, { path: `${H}.${string}` }> as ChildOf<F['path']>]?: ValueOf<F> | null;
    }> | null;
  }
>;

// ---- The record's shape, in selection order ----

export interface LeafNode {
  readonly kind: 'leaf';
  /** Name in its object (`email` for `agent.email`). */
  readonly name: string;
  readonly field: FieldDef;
}
export interface ObjectNode {
  readonly kind: 'object';
  /** `agent`, `externalFields`: an object that may be null or absent. */
  readonly name: string;
  readonly children: readonly LeafNode[];
}
export type ShapeNode = LeafNode | ObjectNode;

/** The record's top-level fields in selection order: leaves, and objects holding their leaves. */
export const RECORD_SHAPE: readonly ShapeNode[] = (() => {
  const out: Array<LeafNode | { kind: 'object'; name: string; children: LeafNode[] }> = [];
  for (const field of SESSION_FIELDS as readonly FieldDef[]) {
    const [parent, name, deeper] = field.path.split('.') as [string, string?, string?];
    const last = out.at(-1);
    if (name === undefined) out.push({ kind: 'leaf', name: parent, field });
    else if (last?.kind === 'object' && last.name === parent) last.children.push({ kind: 'leaf', name, field });
    else if (out.some((n) => n.kind === 'object' && n.name === parent)) {
      throw new Error(`session-fields: the fields of ${parent} must be next to each other (${field.path})`);
    } else out.push({ kind: 'object', name: parent, children: [{ kind: 'leaf', name, field }] });
    if (deeper !== undefined) throw new Error(`session-fields: ${field.path} nests deeper than one object`);
  }
  return out;
})();

/** The GraphQL selection of every field: `id companyId … agent { id name email } …`. */
export const SESSION_SELECTION = RECORD_SHAPE.map((n) =>
  n.kind === 'leaf' ? n.name : `${n.name} { ${n.children.map((c) => c.name).join(' ')} }`,
).join(' ');
