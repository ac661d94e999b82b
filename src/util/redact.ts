/**
 * Secret redaction. Every secret the process learns (API key, client secret, tokens, webhook tokens)
 * is registered here, and every log line and error message passes through `redact()` before it
 * leaves the process.
 */
const secrets = new Set<string>();

/** Registers a secret so that `redact()` hides it wherever it appears. Very short values are ignored. */
export function registerSecret(value: string | undefined | null): void {
  if (typeof value === 'string' && value.length >= 4) secrets.add(value);
}

export const REDACTED = '[REDACTED]';

/** Replaces every registered secret (and its URL-encoded form) in `text`. */
export function redact(text: string): string {
  let out = text;
  for (const s of secrets) {
    for (const form of forms(s)) if (out.includes(form)) out = out.split(form).join(REDACTED);
  }
  return out;
}

function forms(s: string): string[] {
  const f = new Set([s, encodeURIComponent(s)]);
  return [...f];
}

/** A deep copy of `value` with registered secrets replaced in every string, for error properties and logs. */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactDeep(v);
    return out as T;
  }
  return value;
}
