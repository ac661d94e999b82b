/**
 * Issue 38 (LOW): a server's error quoting the API key in hex or as HTML entities, with a
 * right-to-left override (U+202E) and chat markup (`<!channel>`, `@here`, a markdown link), reached
 * the terminal and the webhook: the key's encodings unredacted, the override raw, and the payload's
 * `error` field with the markup as it came (only `text` was escaped). End to end: the CLI against a
 * hostile reporting endpoint on port 0, notifying a real webhook receiver.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const KEY = 'Kx9mP2qL7vR4nT8wZ3yB6sD1';
const hex = Buffer.from(KEY).toString('hex');
const FORMS = {
  hex,
  'hex in upper case': hex.toUpperCase(),
  'decimal entities': [...KEY].map((c) => `&#${c.charCodeAt(0)};`).join(''),
  'hex entities': [...KEY].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join(''),
};
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const MESSAGE = `<!channel> @here [the fix](https://evil.example/) \u202egnp.exe\u202c \u2066x\u2069 key ${Object.values(FORMS).join(' ')}`;

let server: Server;
let url: string;
let receiver: WebhookReceiver<{ text: string; error: string | null }>;
let dir: string;
beforeAll(async () => {
  // Every query answered with a GraphQL error quoting the key and the hostile text.
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: [{ message: MESSAGE }] })));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  receiver = await startWebhookReceiver('/services/T0/B0/hooktoken4711');
  dir = await mkdtemp(join(tmpdir(), 'session-etl-hostile-text-'));
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

describe("a server's error with the key encoded, bidi controls and chat markup", () => {
  it('reaches neither the terminal nor the webhook as it came: the key hidden in hex and HTML entities, no bidi control, `error` escaped as `text`', async () => {
    const r = await runCli(['export', '--since', '2026-11-20', '--no-progress'], {
      REPORTING_URL: url,
      REPORTING_API_KEY: KEY,
      SESSION_ETL_DATA_DIR: join(dir, 'data'),
      SESSION_ETL_NOTIFY_URL: receiver.url,
    });
    expect(r.code).toBe(1);
    expect(receiver.posts).toHaveLength(1);
    const post = receiver.posts[0]!;
    const printed = r.stdout + r.stderr;
    // The error did come through (redacted), so the checks below are not vacuous.
    expect(printed).toContain('[REDACTED]');
    expect(post.json.error).toContain('[REDACTED]');
    for (const [what, form] of Object.entries(FORMS)) {
      for (const [where, text] of [['printed', printed], ['webhook', post.body]] as const) {
        expect(text.toLowerCase().includes(form.toLowerCase()), `${what} in ${where}`).toBe(false);
      }
    }
    expect(BIDI.test(printed), 'a bidi control printed').toBe(false);
    expect(BIDI.test(post.body), 'a bidi control in the webhook').toBe(false);
    // `error` escaped as `text` is: no Slack control, no mention, no markdown link.
    for (const field of [post.json.text, post.json.error!]) {
      expect(field).not.toMatch(/[<>]/);
      expect(field).toContain('&lt;!channel&gt;');
      expect(field).not.toMatch(/@here/);
      expect(field).not.toContain('](');
    }
  });
});
