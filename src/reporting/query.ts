/**
 * Query text for the reporting endpoint. Arguments are inlined as validated literals (as the
 * vendor's own examples do) instead of declared variables, so the query works whether the
 * server declares `Int`, `Int!` or `ID`/`String!` for them. The selection (every field of the
 * session, in the order the body scanner expects) comes from schema/session-fields.ts.
 */
import { SESSION_SELECTION } from '../schema/session-fields.js';

const INT32_MAX = 2 ** 31 - 1;

/** Checks that `n` is a non-negative integer that fits the GraphQL Int type (32-bit). */
export function assertEpochSeconds(n: number, name: string): void {
  if (!Number.isInteger(n) || n < 0 || n > INT32_MAX) {
    throw new RangeError(`${name} must be a whole number of seconds since the epoch between 0 and ${INT32_MAX}, got ${n}`);
  }
}

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

/** `{ sessions(start: S, end: E) { ...every field } }` */
export function sessionsQuery(start: number, end: number): string {
  assertEpochSeconds(start, 'start');
  assertEpochSeconds(end, 'end');
  if (end < start) throw new RangeError(`end (${end}) is before start (${start})`);
  return `{ sessions(start: ${start}, end: ${end}) { ${SESSION_SELECTION} } }`;
}

/** `{ session(id: "UUID") { ...every field } }` */
export function sessionQuery(id: string): string {
  if (!isUuid(id)) throw new RangeError(`session id must be a UUID (8-4-4-4-12 hexadecimal digits), got ${JSON.stringify(id)}`);
  return `{ session(id: "${id}") { ${SESSION_SELECTION} } }`;
}
