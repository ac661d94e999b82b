import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { packageRoot } from '../util/package-root.js';

export const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** The page's files, read once: ours from src/dashboard/assets, uPlot's from its package. */
export function loadAssets(): Map<string, { type: string; body: Buffer }> {
  const root = packageRoot();
  const own = join(root, 'src', 'dashboard', 'assets');
  const uplot = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');
  const files: Array<[string, string, string]> = [
    ['/', join(own, 'index.html'), 'text/html; charset=utf-8'],
    ['/assets/app.js', join(own, 'app.js'), 'text/javascript; charset=utf-8'],
    ['/assets/style.css', join(own, 'style.css'), 'text/css; charset=utf-8'],
    ['/assets/uplot.js', join(uplot, 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
    ['/assets/uplot.css', join(uplot, 'uPlot.min.css'), 'text/css; charset=utf-8'],
    ['/favicon.ico', join(own, 'favicon.svg'), 'image/svg+xml'],
  ];
  return new Map(files.map(([path, file, type]) => [path, { type, body: readFileSync(file) }]));
}
