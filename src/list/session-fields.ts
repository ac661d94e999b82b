import { RECORD_SHAPE, SESSION_FIELDS, type ColumnType, type SessionRecord } from '../schema/session-fields.js';

/**
 * How a field is compared, matched and returned.
 * - `string`: text as is.
 * - `integer`: a number; matched as its decimal text.
 * - `epoch`: seconds since the UNIX epoch in memory, TIMESTAMPTZ in SQL; both sides see whole
 *   seconds (fractions are floored) and regular expressions see the decimal text, e.g. `1709251200`.
 * - `boolean`: matched as `true` / `false`.
 * - `object`: `agent` and `externalFields`; can be returned (attributeNames) but not sorted or filtered.
 */
export type FieldKind = 'string' | 'integer' | 'epoch' | 'boolean' | 'object';

export interface LeafField {
  readonly kind: Exclude<FieldKind, 'object'>;
  /** Name in the interface (the reporting record), dot path: `agent.email`. */
  readonly path: string;
  /** The same field's column in the `sessions` table and the Parquet dataset. */
  readonly column: string;
}

export interface ObjectField {
  readonly kind: 'object';
  readonly path: string;
  readonly children: readonly LeafField[];
}

export type SessionField = LeafField | ObjectField;

const KIND_OF_TYPE: Record<ColumnType, LeafField['kind']> = {
  VARCHAR: 'string',
  BIGINT: 'integer',
  TIMESTAMPTZ: 'epoch',
  BOOLEAN: 'boolean',
};

/**
 * The leaf fields of a session, in contract order (schema/session-fields.ts). `extracted_at` is
 * lineage, not a field of the record, so it is not a list field (a request naming it sees a field
 * that does not exist).
 */
export const LEAF_FIELDS: readonly LeafField[] = SESSION_FIELDS.map((f) => ({ kind: KIND_OF_TYPE[f.type], path: f.path, column: f.column }));

const LEAF_OF_PATH = new Map(LEAF_FIELDS.map((leaf) => [leaf.path, leaf]));

/** Top-level fields of the record in interface order: leaves and the two objects (schema/session-fields.ts RECORD_SHAPE). */
export const TOP_LEVEL_FIELDS: readonly SessionField[] = RECORD_SHAPE.map((n) =>
  n.kind === 'leaf'
    ? LEAF_OF_PATH.get(n.field.path)!
    : { kind: 'object', path: n.name, children: n.children.map((c) => LEAF_OF_PATH.get(c.field.path)!) },
);

const BY_NAME = new Map<string, SessionField>();
for (const f of TOP_LEVEL_FIELDS) {
  BY_NAME.set(f.path, f);
  if (f.kind === 'object') for (const c of f.children) BY_NAME.set(c.path, c);
}
for (const leaf of LEAF_FIELDS) BY_NAME.set(leaf.column, leaf);

/** The tie-breaker of every sort: the session identifier, unique in the `sessions` table. */
export const ID_FIELD: LeafField = BY_NAME.get('id') as LeafField;
/** The session start, which `fromDate` and `toDate` bound. */
export const STARTED_FIELD: LeafField = BY_NAME.get('started') as LeafField;

/**
 * The field a request names, by interface name (`agent.email`, `started`) or by contract column
 * (`agent_email`, `started_at`); case-sensitive. `null` when no such field exists.
 */
export function resolveField(name: string): SessionField | null {
  return BY_NAME.get(name) ?? null;
}

/** Every name `resolveField` accepts, interface names first. */
export function knownFieldNames(): string[] {
  return [...BY_NAME.keys()];
}

/** A leaf's value in a record, `null` when absent; epoch fields floored to whole seconds. */
export function readLeaf(record: SessionRecord, field: LeafField): string | number | boolean | null {
  let value: unknown = record;
  for (const part of field.path.split('.')) {
    if (value === null || typeof value !== 'object') return null;
    value = (value as Record<string, unknown>)[part];
  }
  if (value === undefined || value === null) return null;
  if (field.kind === 'epoch' && typeof value === 'number') return Math.floor(value);
  return value as string | number | boolean;
}

/** The text a regular expression sees: the empty string for null, decimal for numbers. */
export function leafText(value: string | number | boolean | null): string {
  return value === null ? '' : String(value);
}
