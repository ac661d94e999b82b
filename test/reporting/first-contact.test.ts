/**
 * A refused first connection is a wrong address, not an outage (issue 38): exit 2 at once, naming
 * the URL and the setting that holds it, nothing retried. A refusal after the endpoint has answered
 * (a restart mid-run) is retried as before. Real sockets on loopback: a closed port, and a TCP
 * relay in front of the emulator that stops listening and starts again at known steps.
 */
import { createServer, connect, type Server, type Socket, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/pipeline/run.js';
import { RunFailedError } from '../../src/pipeline/errors.js';
import { captureLogger } from '../helpers/capture.js';
import { runCli } from '../helpers/cli.js';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 5 * D;

const fx = useEmulator({ seed: 8, from: FROM - D, now: NOW, sessionsPerDay: 30 }, { prefix: 'session-etl-first-contact-' });

/** A port nothing listens on: one the system gave a server, which is closed again. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A TCP relay to `target` on a port of its own, which can stop listening (connections then refused) and listen again on the same port. */
async function relay(target: number): Promise<{ port: number; stop(): Promise<void>; start(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let server: Server;
  let port = 0;
  const start = async () => {
    server = createServer((down) => {
      const up = connect(target, '127.0.0.1');
      for (const s of [down, up]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {});
      }
      down.pipe(up).pipe(down);
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  };
  await start();
  return {
    port,
    start,
    stop: async () => {
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

describe('the first connection of a run is refused', () => {
  it.each([
    ['nothing listens on the port (ECONNREFUSED)', async () => `http://127.0.0.1:${await closedPort()}/`, 'ECONNREFUSED: connection refused'],
    ['a port fetch never connects to (1)', async () => 'http://127.0.0.1:1/', 'port 1 is one fetch never connects to'],
  ])('%s: exit 2 at once, naming the URL and the setting, nothing retried', async (_what, urlOf, reason) => {
    const url = await urlOf();
    const dataDir = await fx.tempDir();
    const r = await runCli(['export', '--since', isoDay(FROM), '--no-progress'], { REPORTING_URL: url, REPORTING_API_KEY: 'k', SESSION_ETL_DATA_DIR: join(dataDir, 'store') });
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain('retrying a request');
    expect(r.stderr).toContain(`cannot connect to the reporting endpoint ${url}: ${reason}`);
    expect(r.stderr).toContain('check REPORTING_URL in the environment');
    expect(r.stderr).toContain('running it again will not help until that is fixed');
    expect(r.stderr).not.toContain('run the same command again');
    expect(r.stdout).toMatch(/requests +\d+ \(0 retries/);
  });
});

describe('a refusal after the endpoint has answered (a restart mid-run)', () => {
  it('is retried, counted and logged, and the run succeeds', async () => {
    const proxy = await relay(Number(new URL(fx.emu.url).port));
    const logger = captureLogger();
    let requests = 0;
    const sleeps: number[] = [];
    try {
      const s = await runBackfill({
        reportingUrl: `http://127.0.0.1:${proxy.port}/`,
        apiKey: fx.emu.apiKey,
        dataDir: await fx.tempDir(),
        from: FROM,
        to: FROM + 3 * D,
        concurrency: 1,
        logger,
        // The endpoint goes away after its first answer: the second request is refused.
        fetch: async (input, init) => {
          if (++requests === 2) await proxy.stop();
          return fetch(input, init);
        },
        // ...and is back by the time the retry is sent.
        sleep: async (ms) => {
          sleeps.push(ms);
          await proxy.start();
        },
      });
      expect(s.outcome).toBe('succeeded');
      expect(s.windows.done).toBe(3);
      const retries = logger.lines.map((l) => JSON.parse(l) as { msg: string; kind: string; message: string }).filter((l) => l.msg === 'retrying a request');
      expect(retries).toHaveLength(1);
      expect(retries[0]!.kind).toBe('network');
      expect(retries[0]!.message).toContain('ECONNREFUSED');
      expect(s.retries).toBe(1);
      expect(s.requests).toBe(4);
      expect(sleeps).toHaveLength(1);
    } finally {
      await proxy.stop().catch(() => {});
    }
  });

  it('a refused first connection in-process is an EndpointUnreachableError with exit code 2, not retried', async () => {
    const port = await closedPort();
    const logger = captureLogger();
    const err = await runBackfill({
      reportingUrl: `http://127.0.0.1:${port}/`,
      apiKey: 'k',
      dataDir: await fx.tempDir(),
      from: FROM,
      to: FROM + D,
      logger,
      sleep: async () => {},
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunFailedError);
    expect((err as RunFailedError).exitCode).toBe(2);
    expect(logger.lines.filter((l) => l.includes('retrying a request'))).toHaveLength(0);
  });
});
