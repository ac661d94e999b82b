/**
 * The delivery of one notification step (many posts): side by side under one deadline, every
 * post's first attempt before any retry, and a stop that ends it at once. Real receivers on
 * port 0; budgets shrunk so that the test takes about a second.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverAll } from '../../src/monitoring/notify-delivery.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

let silent: WebhookReceiver;
let answering: WebhookReceiver;
beforeAll(async () => {
  silent = await startWebhookReceiver('hook/silent', { answer: false });
  answering = await startWebhookReceiver('hook/answering');
});
afterAll(async () => {
  await silent.close();
  await answering.close();
});

const bodies = (n: number, tag: string) => Array.from({ length: n }, (_, i) => JSON.stringify({ tag, i }));
const seen = (r: WebhookReceiver, tag: string) => r.posts.filter((p) => p.json.tag === tag).map((p) => p.json.i as number);

describe('deliverAll', () => {
  it('a receiver that never answers: more posts than slots, each tried once before any is retried, all within the deadline', async () => {
    const t0 = Date.now();
    const out = await deliverAll(silent.url, bodies(12, 'fair'), { concurrency: 4, attemptTimeoutMs: 150, backoffMs: [50], deadlineMs: t0 + 1_000 });
    const took = Date.now() - t0;
    expect(took).toBeLessThan(1_000 + 500);
    expect(out.every((d) => !d.delivered && d.attempts >= 1)).toBe(true);
    const order = seen(silent, 'fair');
    // The first twelve posts the receiver got are the twelve first attempts (those in flight together may arrive in any order).
    expect(order.slice(0, 12).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(order.length).toBeGreaterThan(12); // and the time left went to retries
    expect(out[0]!.error).toMatch(/^no answer within \d+ ms$/);
  });

  it('a receiver that answers: every post delivered once, in parallel', async () => {
    const out = await deliverAll(answering.url, bodies(10, 'ok'), { concurrency: 3 });
    expect(out.map((d) => [d.delivered, d.attempts])).toEqual(Array.from({ length: 10 }, () => [true, 1]));
    expect(seen(answering, 'ok').sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i));
  });

  it('a stop aborts the posts in flight and starts no other', async () => {
    const stop = new AbortController();
    setTimeout(() => stop.abort(new Error('SIGTERM')), 200);
    const t0 = Date.now();
    const out = await deliverAll(silent.url, bodies(6, 'stop'), { concurrency: 2, stopSignal: stop.signal, deadlineMs: t0 + 15_000 });
    expect(Date.now() - t0).toBeLessThan(1_500);
    expect(seen(silent, 'stop').sort()).toEqual([0, 1]);
    expect(out.map((d) => d.error)).toEqual([
      'stopped (the process is stopping) before an answer',
      'stopped (the process is stopping) before an answer',
      ...Array.from({ length: 4 }, () => 'not sent: the process is stopping'),
    ]);
  });
});
