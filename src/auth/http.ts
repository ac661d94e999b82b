import { describeNetworkError } from '../util/describe-network-error.js';
import { redact } from '../util/redact.js';
import type { ZodError } from 'zod';
/** The `fetch` signature the clients accept, so tests and callers can inject their own. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Parses a body as JSON when it is JSON, and keeps it as text otherwise (error bodies are not published). */
export function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A short description of a fetch failure: the system error code when there is one. */
export { describeNetworkError };

/** A body for an error message: text or JSON, cut at 300 characters; empty for no body. */
export function summarizeBody(body: unknown): string {
  if (body === undefined || body === null || body === '') return '';
  // Redact before cutting: a secret cut in half would no longer match.
  const text = redact(typeof body === 'string' ? body : JSON.stringify(body));
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** Each issue of a validation as `path: message` (`(body)` for the whole answer). */
export const describeIssues = (e: ZodError): string[] => e.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
