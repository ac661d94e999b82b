/** A session record as the reporting endpoint returns it: the type is derived from the field table (schema/session-fields.ts). */
export type { SessionRecord } from '../schema/session-fields.js';
