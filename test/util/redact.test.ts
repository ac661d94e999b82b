import { describe, expect, it } from 'vitest';
import { reportFailure } from '../../src/cli/report-failure.js';
import { GraphQLResponseError } from '../../src/reporting/errors/graphql-response-error.js';
import { redact, redactDeep, registerSecret } from '../../src/util/redact.js';

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
  ])('%s', (_what, form) => {
    const out = redact(`the server said: ${form} (end)`);
    expect(out).toContain('[REDACTED]');
    expect(out).not.toContain(form);
    // No recognisable piece of the key either.
    expect(out).not.toContain(KEY.slice(4, 16));
    expect(out.toLowerCase()).not.toContain(KEY.slice(4, 16).toLowerCase());
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
