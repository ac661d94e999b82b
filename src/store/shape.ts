/**
 * What differs between a store of one account and of many (docs/accounts.md): the `account` column
 * that starts a many-account store's rows and key. Every state row carries an account in both ('' the
 * one of a single-account store). Decided here only; below, it is SQL fragments, one code path.
 */
import { sessionsTableDdl, SESSION_COLUMNS } from './contract.js';

/** The account of a single-account store's state rows. */
export const SINGLE_ACCOUNT = '';

/** Recorded as `accounts` in _session_etl_meta (before schema 3: single). */
export type StoreAccounts = 'single' | 'many';

export interface StoreShape {
  /** A many-account store: for the layer that decides which shape a store has (session-store.ts's open, accounts/); nothing below it asks. */
  readonly many: boolean;
  /** The columns a stored row has before the contract's: `account`, or none. */
  readonly accountColumns: readonly string[];
  /** The columns of `sessions` and of a partition file, in order: the contract's, after `account` with many accounts. */
  readonly columns: readonly string[];
  readonly columnList: string;
  /** What identifies a session's row: `session_id`, or `account, session_id`. */
  readonly key: string;
  /** The order of a partition file's rows: by start (by account first with many accounts, so that row groups' statistics let a reader skip other accounts). */
  readonly fileOrder: string;
  /** A stored row's account as an SQL value (of the row aliased `alias`): its `account` column, or '' (the one account). */
  account(alias?: string): string;
  /** The condition that stored rows `a` and `b` (aliases) are versions of one session: their key columns are equal. */
  sameSession(a: string, b: string): string;
  /** `CREATE TABLE IF NOT EXISTS` of a table of stored rows: the store's columns, then `extra` ones (`name TYPE`). */
  tableDdl(table: string, ...extra: string[]): string;
}

const CONTRACT = SESSION_COLUMNS.map((c) => c.name);

export function storeShape(accounts: StoreAccounts): StoreShape {
  const many = accounts === 'many';
  const accountColumns = many ? ['account'] : [];
  const keyColumns = [...accountColumns, 'session_id'];
  const columns = [...accountColumns, ...CONTRACT];
  return {
    many,
    accountColumns,
    columns,
    columnList: columns.join(', '),
    key: keyColumns.join(', '),
    fileOrder: [...accountColumns, 'started_at', 'session_id'].join(', '),
    account: (alias) => (many ? (alias ? `${alias}.account` : 'account') : `''`),
    sameSession: (a, b) => keyColumns.map((k) => `${a}.${k} = ${b}.${k}`).join(' AND '),
    tableDdl: (table, ...extra) => sessionsTableDdl(table, accountColumns, extra),
  };
}
