import { RECORD_SHAPE, SESSION_FIELDS, type ColumnType, type SessionRecord } from '../schema/session-fields.js';

/**
 * How a field is compared, matched and returned. `epoch`: seconds since the UNIX epoch in memory,
 * TIMESTAMPTZ in SQL, whole seconds (floored) on both sides, matched as decimal text like numbers;
 * `object`: `agent` and `externalFields`, returned (attributeNames) but not sorted or filtered.
 */
export type FieldKind = 'string' | 'integer' | 'epoch' | 'boolean' | 'object';

export interface LeafField {
  readonly kind: Exclude<FieldKind, 'object'>;
  /** Name in the interface (the reporting record), dot path: `agent.email`. */
  readonly path: string;
  /** Its column in the `sessions` table and the Parquet dataset. */
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

/** The leaf fields in contract order; `extracted_at` is lineage, not a field of the record, so not a list field. */
export const LEAF_FIELDS: readonly LeafField[] = SESSION_FIELDS.map((f) => ({ kind: KIND_OF_TYPE[f.type], path: f.path, column: f.column }));

const LEAF_OF_PATH = new Map(LEAF_FIELDS.map((leaf) => [leaf.path, leaf]));

/** Top-level fields of the record in interface order: leaves and the two objects. */
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

/** The tie-breaker of every sort (unique in the `sessions` table), and what `fromDate` and `toDate` bound. */
export const ID_FIELD: LeafField = BY_NAME.get('id') as LeafField;
export const STARTED_FIELD: LeafField = BY_NAME.get('started') as LeafField;

/** By interface name (`agent.email`) or contract column (`agent_email`), case-sensitive; `null` when there is none. */
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
  if (field.kind === 'epoch' && typeof value === 'number') return Math.floor(value);
  return (value ?? null) as string | number | boolean | null;
}

/** The text a regular expression sees: '' for null, decimal for numbers. */
export function leafText(value: string | number | boolean | null): string {
  return value === null ? '' : String(value);
}
