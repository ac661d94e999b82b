import type { Emulator } from '../../src/emulator/index.js';
import { D } from '../helpers/time.js';

export { D };

/** Thursday 2026-01-15 14:00:00Z: mid-afternoon on a weekday, so sessions are running. */
export const NOW = Date.UTC(2026, 0, 15, 14) / 1000;
export const TODAY = NOW - 14 * 3_600;
export const FROM = TODAY - 14 * D;

export const ALL_FIELDS =
  'id companyId pin started ended duration sessionType recording recordingUrl agent { id name email } ' +
  'agentGroupId agentIp customerIp externalFields { customerName externalCaseId notes accountingInfo customerDeviceType customerOs }';

export function sessionsQuery(start: number | string, end: number | string, fields = ALL_FIELDS): string {
  return `{ sessions(start: ${start}, end: ${end}) { ${fields} } }`;
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
}

/** POSTs a body to the emulator (as a GraphQL request unless `raw`), with its key unless told otherwise. */
export async function post(
  emu: Emulator,
  body: { query: string; variables?: unknown; operationName?: string } | { raw: string },
  init: { authorization?: string | null; path?: string; method?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const authorization = init.authorization === undefined ? emu.apiKey : init.authorization;
  if (authorization !== null) headers.authorization = authorization;
  const method = init.method ?? 'POST';
  const res = await fetch(new URL(init.path ?? '/', emu.url), {
    method,
    headers,
    body: method === 'GET' || method === 'HEAD' ? undefined : 'raw' in body ? body.raw : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}
