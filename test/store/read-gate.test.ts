/** The read gate (store/read-gate.ts) a writer's Db passes every statement through: a new store's re-attach runs with no reader inside. */
import { describe, expect, it } from 'vitest';
import { ReadGate } from '../../src/store/read-gate.js';

describe('ReadGate', () => {
  it('the exclusive moment waits for running readers, and readers that come meanwhile wait for it', async () => {
    const gate = new ReadGate();
    const events: string[] = [];
    let release!: () => void;
    const first = gate.read(async () => {
      events.push('read 1 begins');
      await new Promise<void>((r) => (release = r));
      events.push('read 1 ends');
    });
    const excl = gate.exclusive(async () => {
      events.push('exclusive');
    });
    const second = gate.read(async () => {
      events.push('read 2');
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(events).toEqual(['read 1 begins']);
    release();
    await Promise.all([first, excl, second]);
    expect(events).toEqual(['read 1 begins', 'read 1 ends', 'exclusive', 'read 2']);
  });
});
