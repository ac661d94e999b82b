/**
 * What differs between a store of one account and a store of many (docs/accounts.md): the `account`
 * column. A many-account store's `sessions` table and dataset files start with it, and a session is
 * identified by its account and its id; a single-account store's are exactly the column contract.
 * Everything else (coverage, checkpoints, runs, backfills, rejected records) carries an account in
 * both, '' being the one account of a single-account store. The SQL that depends on it is built here,
 * once per store, so that the merge, the Parquet writers and the readers share one code path.
 */
import { SESSION_COLUMNS } from './contract.js';

/** The account of a single-account store's state rows. */
export const SINGLE_ACCOUNT = '';

export interface StoreShape {
  /** A many-account store: `sessions` and the dataset carry an `account` column. */
  readonly many: boolean;
  /** The columns of `sessions` and of a partition file, in order: the contract's, after `account` with many accounts. */
  readonly columns: readonly string[];
  /** The same as a select list. */
  readonly columnList: string;
  /** What identifies a session's row: `session_id`, or `account, session_id`. */
  readonly key: string;
  /** The order of a partition file's rows: by start (by account first with many accounts, so that row groups' statistics let a reader skip other accounts). */
  readonly fileOrder: string;
}

const CONTRACT = SESSION_COLUMNS.map((c) => c.name);

export function storeShape(many: boolean): StoreShape {
  const columns = many ? ['account', ...CONTRACT] : CONTRACT;
  return {
    many,
    columns,
    columnList: columns.join(', '),
    key: many ? 'account, session_id' : 'session_id',
    fileOrder: many ? 'account, started_at, session_id' : 'started_at, session_id',
  };
}
