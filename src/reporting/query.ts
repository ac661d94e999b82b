/**
 * Query text. Arguments are inlined as validated literals (as the vendor's examples do), not declared
 * variables, so the query works whether the server declares `Int`, `Int!` or `ID`/`String!` for them.
 */
import { SESSION_SELECTION } from '../schema/session-fields.js';

const INT32_MAX = 2 ** 31 - 1;

/** `n` must fit the GraphQL Int type (32-bit). */
function assertEpochSeconds(n: number, name: string): void {
  if (!Number.isInteger(n) || n < 0 || n > INT32_MAX) {
    throw new RangeError(`${name} must be a whole number of seconds since the epoch between 0 and ${INT32_MAX}, got ${n}`);
  }
}

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function sessionsQuery(start: number, end: number): string {
  assertEpochSeconds(start, 'start');
  assertEpochSeconds(end, 'end');
  if (end < start) throw new RangeError(`end (${end}) is before start (${start})`);
  return `{ sessions(start: ${start}, end: ${end}) { ${SESSION_SELECTION} } }`;
}

export function sessionQuery(id: string): string {
  if (!UUID_RE.test(id)) throw new RangeError(`session id must be a UUID (8-4-4-4-12 hexadecimal digits), got ${JSON.stringify(id)}`);
  return `{ session(id: "${id}") { ${SESSION_SELECTION} } }`;
}
