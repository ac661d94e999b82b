import { describe, expect, it } from 'vitest';
import { reportFailure } from '../../src/cli/report-failure.js';
import { GraphQLResponseError } from '../../src/reporting/errors/graphql-response-error.js';
import { createRedactor, redact, redactDeep, registerSecret, UNCHECKED } from '../../src/util/redact.js';

// A key with a '/' (JSON may escape it as '\/'), a '+' and mixed case, as API keys often are.
const KEY = 'rk-Abc/Def+Ghi9-Jq2Xz7Lm';
registerSecret(KEY);

function sink() {
  let text = '';
  return { stream: { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream, text: () => text };
}

describe('redact hides every form of a registered secret', () => {
  it.each([
    ['as is', KEY],
    ['JSON-escaped, slash as \\/', KEY.replaceAll('/', '\\/')],
    ['lower-cased', KEY.toLowerCase()],
    ['upper-cased', KEY.toUpperCase()],
    ['URL-encoded', encodeURIComponent(KEY)],
    ['form-encoded', new URLSearchParams({ k: KEY }).toString().slice(2)],
    ['base64', Buffer.from(KEY).toString('base64')],
    ['base64 without padding', Buffer.from(KEY).toString('base64').replace(/=+$/, '')],
    ['base64url', Buffer.from(KEY).toString('base64url')],
    ['base64 inside Basic credentials', Buffer.from(`client-id:${KEY}`).toString('base64')],
    ['base64 at another offset', Buffer.from(`ab${KEY}xyz`).toString('base64')],
    ['hex', Buffer.from(KEY).toString('hex')],
    ['hex in upper case', Buffer.from(KEY).toString('hex').toUpperCase()],
    ['hex byte escapes (\\xNN)', [...Buffer.from(KEY)].map((b) => `\\x${b.toString(16)}`).join('')],
    ['every byte URL-encoded (%NN)', [...Buffer.from(KEY)].map((b) => `%${b.toString(16).toUpperCase()}`).join('')],
    ['every character JSON-escaped (\\u00NN)', [...KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')],
    ['decimal HTML entities', [...KEY].map((c) => `&#${c.charCodeAt(0)};`).join('')],
    ['hex HTML entities', [...KEY].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join('')],
    ['hex HTML entities in upper case', [...KEY].map((c) => `&#X${c.charCodeAt(0).toString(16).toUpperCase()};`).join('')],
    ['HTML entities for the punctuation only', KEY.replace(/[^A-Za-z0-9]/g, (c) => `&#${c.charCodeAt(0)};`)],
  ])('%s', (_what, form) => {
    const out = redact(`the server said: ${form} (end)`);
    expect(out).toContain('[REDACTED]');
    expect(out).not.toContain(form);
    // No recognisable piece of the key either.
    expect(out).not.toContain(KEY.slice(4, 16));
    expect(out.toLowerCase()).not.toContain(KEY.slice(4, 16).toLowerCase());
  });

  it('named HTML entities: a secret holding & < > " \' as an HTML page escapes them', () => {
    const r = createRedactor();
    const secret = `k&y<9>"Zq'w2Xz7Lm`;
    r.register(secret);
    for (const form of [`k&amp;y&lt;9&gt;&quot;Zq&#39;w2Xz7Lm`, `k&amp;y&lt;9&gt;&quot;Zq&apos;w2Xz7Lm`, `K&AMP;Y&LT;9&GT;&QUOT;ZQ&#39;W2XZ7LM`]) {
      expect(r.redact(`<p>${form}</p>`), form).toBe('<p>[REDACTED]</p>');
    }
  });

  it('hides the user:password part of any URL', () => {
    expect(redact('connecting to https://bob:hunter2hunter@reporting.example.com/graphql failed')).toBe(
      'connecting to https://[REDACTED]@reporting.example.com/graphql failed',
    );
    expect(redact('mail bob@example.com')).toBe('mail bob@example.com');
  });

  it('copies a hostile, deeply nested GraphQL extensions object without overflowing the stack', () => {
    let deep: unknown = { token: KEY };
    for (let i = 0; i < 100_000; i++) deep = { extensions: deep };
    const err = new GraphQLResponseError([{ message: `bad ${KEY}`, extensions: deep as Record<string, unknown> }], null);
    expect(err.message).not.toContain(KEY);
    expect(JSON.stringify(err.errors)).toContain('[nested too deep]');
    expect(JSON.stringify(redactDeep({ a: [{ b: KEY }] }))).toBe('{"a":[{"b":"[REDACTED]"}]}');
  });
});

describe('printed errors', () => {
  it('redact the whole cause chain (a library error holding a token)', () => {
    const s = sink();
    const cause = new TypeError(`Headers.append: "Bearer ${KEY.toLowerCase()}" is an invalid header value.`);
    const code = reportFailure(new Error('the console could not be reached', { cause: new Error('request failed', { cause }) }), s.stream);
    expect(code).toBe(1);
    expect(s.text()).toContain('caused by: Headers.append');
    expect(s.text().toLowerCase()).not.toContain(KEY.toLowerCase());
  });
});

/**
 * Every form redaction promises to hide (file header of src/util/redact.ts), as a server might echo
 * it. Inside a longer base64 text, the first and last 4 characters also encode the bytes around the
 * secret: those stay (they cannot be told from the neighbours), the rest is hidden.
 */
const EDGE = /^[A-Za-z0-9+/=]{0,4}\[REDACTED\][A-Za-z0-9+/=]{0,4}$/;
function echoedForms(secret: string): Record<string, string> {
  return {
    plain: secret,
    lower: secret.toLowerCase(),
    upper: secret.toUpperCase(),
    'JSON-escaped': JSON.stringify(secret).slice(1, -1).replaceAll('/', '\\/'),
    'URL-encoded': encodeURIComponent(secret),
    'URL-encoded, upper-cased': encodeURIComponent(secret).toUpperCase(),
    'form-encoded': new URLSearchParams({ k: secret }).toString().slice(2),
    base64: Buffer.from(secret).toString('base64'),
    base64url: Buffer.from(secret).toString('base64url'),
    'base64 at offset 1': Buffer.from(`x${secret}`).toString('base64'),
    'base64 at offset 2': Buffer.from(`id:${secret}`).toString('base64'),
  };
}

/** A random-looking secret of `n` characters with '/', '+' and mixed case (the forms differ from the plain text). */
function secretOf(n: number, seed: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+-';
  let x = seed * 2654435761;
  let out = '';
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out += alphabet[(x >>> 16) % alphabet.length];
  }
  return out;
}

describe('secrets of any size and number (issue 28: one oversized secret made every redact() throw, quoting all of them)', () => {
  // 100,000 characters: a wrong file named as a key file. The old single pattern broke from ~25,000.
  const HUGE = secretOf(100_000, 7);
  const OTHER = 'rk-other-Account/Key+0042';
  registerSecret(HUGE);
  registerSecret(OTHER);

  it('redact() does not throw, and hides the huge secret in every form and the other secrets beside it', () => {
    for (const [what, form] of Object.entries(echoedForms(HUGE))) {
      const text = `before ${form} between ${OTHER} after`;
      let out = '';
      expect(() => (out = redact(text)), what).not.toThrow();
      const [before, first, between, second, after] = out.split(' ');
      expect([before, between, second, after], what).toEqual(['before', 'between', '[REDACTED]', 'after']);
      expect(first, what).toMatch(what.includes('offset') ? EDGE : /^\[REDACTED\]$/);
    }
  });

  it('a failure printed while the huge secret is registered shows no secret and keeps its exit code', () => {
    const s = sink();
    const code = reportFailure(new Error(`account umbrella failed`, { cause: new Error(`the server said ${OTHER} and ${KEY}`) }), s.stream);
    expect(code).toBe(1);
    expect(s.text()).toBe('error: account umbrella failed\n  caused by: the server said [REDACTED] and [REDACTED]\n');
  });

  it('many secrets, short and long: each hidden in every form, in one text', () => {
    const r = createRedactor();
    const secrets = Array.from({ length: 300 }, (_, i) => secretOf(i % 10 === 0 ? 300 + i * 10 : 20 + (i % 40), i + 1));
    for (const s of secrets) r.register(s);
    for (const s of [secrets[0]!, secrets[1]!, secrets[150]!, secrets[299]!]) {
      for (const [what, form] of Object.entries(echoedForms(s))) {
        const out = r.redact(`<<${form}>>`);
        expect(out.slice(2, -2), `${s.length} characters, ${what}`).toMatch(what.includes('offset') ? EDGE : /^\[REDACTED\]$/);
      }
    }
    const all = secrets.join(' ; ');
    expect(r.redact(all)).toBe(secrets.map(() => '[REDACTED]').join(' ; '));
  });

  it('overlapping secrets are hidden together, not the first and the rest of the second', () => {
    const r = createRedactor();
    r.register('alpha-BRAVO');
    r.register('BRAVO-charlie');
    expect(r.redact('x alpha-BRAVO-charlie y')).toBe('x [REDACTED] y');
  });

  it('fails closed: a text that cannot be checked is withheld whole, and the failure (which quotes the secrets) is not shown', () => {
    // The old design's limits: every form compiled into one pattern, which V8 refuses for a long secret.
    const r = createRedactor({ regexFormChars: Infinity, patternChars: Infinity });
    r.register(OTHER);
    r.register(HUGE);
    let out = '';
    expect(() => (out = r.redact(`the key ${OTHER} was refused`))).not.toThrow();
    expect(out).toBe(UNCHECKED);
    expect(out).not.toContain(OTHER);
  });
});
