/**
 * Bench case 8 (issue 17): the dashboard over a large store. Starts `session-etl dashboard` as a
 * real process on the data directory, loads the page in Chromium (Debian's, through
 * playwright-core) and measures the time from navigation to the health, the stored sessions and
 * the coverage calendar being painted; then each API answer's time as the page asks for it.
 */
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'session-etl.js');

export interface DashboardFigures {
  /** Navigation to health + total + calendar painted, first load after the process started (cold). */
  firstPaintMs: number;
  /** The same on a second load (the process and the OS cache warm). */
  secondPaintMs: number;
  /** Each API path's answer time (first request, after the page loads). */
  apiMs: Record<string, number>;
}

export async function measureDashboard(dataDir: string, chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'): Promise<DashboardFigures> {
  const child = spawn(process.execPath, [BIN, 'dashboard', '--port', '0', '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => child.on('close', () => r()));
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  try {
    // The address as printed, with the token made for this start (docs/dashboard.md "Access").
    const url = await new Promise<string>((resolveUrl, reject) => {
      const t = setInterval(() => {
        const m = /^Dashboard: (\S+)\n/.exec(out);
        if (m) {
          clearInterval(t);
          resolveUrl(m[1]!);
        } else if (child.exitCode !== null) {
          clearInterval(t);
          reject(new Error(`the dashboard exited ${child.exitCode}: ${out}`));
        }
      }, 20);
    });
    const paint = async (): Promise<number> => {
      const page = await browser.newPage();
      await page.goto(url, { waitUntil: 'commit' });
      // performance.now() counts from the navigation's start; polled every frame.
      // (A function, not a string: the page's CSP allows no eval.)
      const handle = await page.waitForFunction(
        () => {
          // eslint-disable-next-line @typescript-eslint/no-explicit-any
          const doc = (globalThis as any).document;
          const health = doc.querySelector('[data-testid=health]')?.getAttribute('data-state');
          const total: string = doc.querySelector('[data-testid=total-sessions]')?.textContent ?? '';
          const days: number = doc.querySelectorAll('[data-testid=coverage-day]').length;
          return health && /\d/.test(total) && days > 0 ? performance.now() : false;
        },
        undefined,
        { polling: 'raf', timeout: 60_000 },
      );
      const ms = (await handle.jsonValue()) as number;
      await page.close();
      return ms;
    };
    const firstPaintMs = await paint();
    const secondPaintMs = await paint();
    const apiMs: Record<string, number> = {};
    for (const path of ['/api/overview', '/api/coverage', '/api/runs', '/api/charts', '/api/sessions?pageSize=25', '/api/sessions?filter=recording%3D%22true%22&sort=duration%20desc&pageSize=25']) {
      const t0 = performance.now();
      const res = await fetch(new URL(path, url), { headers: { Authorization: `Bearer ${new URL(url).searchParams.get('token')}` } });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
      apiMs[path] = performance.now() - t0;
    }
    return { firstPaintMs, secondPaintMs, apiMs };
  } finally {
    await browser.close();
    child.kill('SIGTERM');
    await exited;
  }
}
