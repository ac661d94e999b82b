/**
 * Every secret the process learns is registered here, and every log line and error message passes through
 * `redact()`. A server may echo a secret back in another form, so each is hidden in every form it may take
 * (docs/monitoring.md lists them, base64 also at any offset, as in `Basic base64(id:secret)`). Never throws; fails
 * closed (UNCHECKED).
 */
import { mergeRanges, secretMatcher, MATCHER_LIMITS, type MatcherLimits, type SecretMatcher } from './secret-matcher.js';

export const REDACTED = '[REDACTED]';

/** What `redact()` returns for a text it cannot check (a bug, a regex engine limit); the failure's message is dropped too. */
export const UNCHECKED = '[text withheld: it could not be checked for secrets]';

/** A URL's user:password@ (any scheme), up to the host. */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]+@/gi;

/**
 * A registry of secrets and its redaction (the process's: `registerSecret`, `redact`; tests make others). The matcher
 * is rebuilt on the first `redact()` after a register, so registering many secrets costs one build.
 */
export function createRedactor(limits: MatcherLimits = MATCHER_LIMITS) {
  const secrets = new Set<string>();
  let matcher: SecretMatcher | undefined;
  const build = (): SecretMatcher => {
    const ci: string[] = [];
    const cs: string[] = [];
    for (const s of secrets) {
      ci.push(...textForms(s));
      cs.push(...base64Forms(s));
    }
    return secretMatcher(ci, cs, limits);
  };
  return {
    register(value: string | undefined | null): void {
      if (typeof value === 'string' && value.length >= 4 && !secrets.has(value)) {
        secrets.add(value);
        matcher = undefined;
      }
    },
    redact(text: string): string {
      try {
        let out = String(text);
        if (secrets.size) {
          matcher ??= build();
          let at = 0;
          let replaced = '';
          for (const [s, e] of mergeRanges(matcher.ranges(out))) {
            replaced += out.slice(at, s) + REDACTED;
            at = e;
          }
          out = replaced + out.slice(at);
        }
        if (out.includes('@')) out = out.replace(USERINFO, `$1${REDACTED}@`);
        return out;
      } catch {
        // Fail closed: the error may quote the text or the secrets; neither is shown.
        return UNCHECKED;
      }
    },
  };
}

const processRedactor = createRedactor();

/** Registers a secret so that `redact()` hides it wherever it appears. Very short values are ignored. */
export function registerSecret(value: string | undefined | null): void {
  processRedactor.register(value);
}

/** `text` with every registered secret (in each of its forms) and every URL's userinfo replaced; never throws. */
export function redact(text: string): string {
  return processRedactor.redact(text);
}

/** The forms of `s` matched case-insensitively. */
function textForms(s: string): string[] {
  const json = JSON.stringify(s).slice(1, -1);
  const bytes = [...Buffer.from(s, 'utf8')].map((b) => b.toString(16).padStart(2, '0'));
  const chars = [...s];
  const code = (c: string) => c.codePointAt(0)!;
  const punctuation = (entity: (c: string) => string) => chars.map((c) => (/[A-Za-z0-9]/.test(c) ? c : entity(c))).join('');
  return [
    s,
    json,
    json.replaceAll('/', '\\/'),
    chars.map((c) => (code(c) > 0xffff ? JSON.stringify(c).slice(1, -1) : `\\u${code(c).toString(16).padStart(4, '0')}`)).join(''),
    encodeURIComponent(s),
    new URLSearchParams({ x: s }).toString().slice(2),
    bytes.map((b) => `%${b}`).join(''),
    // Hex: as one run, and as C / JavaScript / Python byte escapes.
    bytes.join(''),
    bytes.map((b) => `\\x${b}`).join(''),
    // HTML: every character a numeric entity, only the punctuation, or the characters HTML escapes by name.
    chars.map((c) => `&#${code(c)};`).join(''),
    chars.map((c) => `&#x${code(c).toString(16)};`).join(''),
    punctuation((c) => `&#${code(c)};`),
    punctuation((c) => `&#x${code(c).toString(16)};`),
    s.replace(/[&<>"']/g, (c) => HTML_NAMED[c]!),
    s.replace(/[&<>"']/g, (c) => (c === "'" ? '&apos;' : HTML_NAMED[c]!)),
  ];
}

/** The characters HTML escapes by name (`'` has no name in HTML 4: `&#39;`, `&apos;` in HTML 5). */
const HTML_NAMED: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** The base64 and base64url forms of `s`, at each of the three byte offsets inside a longer text. */
export function base64Forms(s: string): string[] {
  const bytes = Buffer.from(s, 'utf8');
  const out: string[] = [];
  for (let shift = 0; shift < 3; shift++) {
    const b64 = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    // Characters of the first group mix in the bytes before the secret; those of an incomplete last
    // group the bytes after it (or the padding).
    const head = shift === 0 ? 0 : 4;
    const tail = (shift + bytes.length) % 3 === 0 ? 0 : 4;
    const core = b64.slice(head, b64.length - tail);
    if (shift === 0) out.push(b64, b64.replace(/=+$/, ''));
    if (core.length >= 8) out.push(core);
  }
  return [...out, ...out.map((f) => f.replaceAll('+', '-').replaceAll('/', '_'))];
}

/** How deep `redactDeep` copies; anything deeper is replaced (a hostile body may nest thousands of levels). */
const MAX_REDACT_DEPTH = 32;
const TOO_DEEP = '[nested too deep]';

/** A deep copy of `value` with registered secrets replaced in every string (keys too), at most MAX_REDACT_DEPTH deep, no cycle. */
export function redactDeep<T>(value: T, depth = 0, seen: WeakSet<object> = new WeakSet()): T {
  if (typeof value === 'string') return redact(value) as T;
  if (!value || typeof value !== 'object') return value;
  if (depth >= MAX_REDACT_DEPTH || seen.has(value)) return TOO_DEEP as T;
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) out = value.map((v) => redactDeep(v, depth + 1, seen));
  else {
    const o: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) o[redact(k)] = redactDeep(v, depth + 1, seen);
    out = o;
  }
  seen.delete(value);
  return out as T;
}

/** The redacted messages of `err` and its cause chain (at most `max`); non-Error causes as text. */
export function redactedCauseChain(err: unknown, max = 8): string[] {
  const out: string[] = [];
  let cur: unknown = err;
  while (cur !== undefined && cur !== null && out.length < max) {
    out.push(redact(cur instanceof Error ? cur.message : String(cur)));
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return out;
}
