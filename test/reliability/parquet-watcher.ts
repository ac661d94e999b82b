/**
 * A reader that lists parquet/sessions/ every few milliseconds while runs write and die, the way a
 * BI tool refreshing at a bad moment would. Every name it sees must be a `date=…` directory holding
 * `.parquet` files, and every file it manages to open must be complete: `PAR1` at both ends and a
 * footer length that fits the file (a half-written or truncated file fails one of these).
 */
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface WatchReport {
  listings: number;
  filesChecked: number;
  violations: string[];
}

const MAGIC = Buffer.from('PAR1');

export function watchParquet(dataDir: string, intervalMs = 4): { stop(): Promise<WatchReport> } {
  const root = join(dataDir, 'parquet', 'sessions');
  const report: WatchReport = { listings: 0, filesChecked: 0, violations: [] };
  let running = true;
  const violation = (v: string) => {
    if (report.violations.length < 20) report.violations.push(v);
  };
  const loop = (async () => {
    while (running) {
      await scan(root, report, violation);
      await new Promise((r) => setTimeout(r, intervalMs));
    }
    await scan(root, report, violation);
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return report;
    },
  };
}

async function scan(root: string, report: WatchReport, violation: (v: string) => void): Promise<void> {
  let dirs: string[];
  try {
    dirs = await readdir(root);
  } catch {
    return; // not created yet (or the data directory was removed)
  }
  report.listings++;
  for (const d of dirs) {
    if (!/^date=(\d{4}-\d{2}-\d{2}|__HIVE_DEFAULT_PARTITION__)$/.test(d)) {
      violation(`unexpected entry parquet/sessions/${d}`);
      continue;
    }
    let files: string[];
    try {
      files = await readdir(join(root, d));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') violation(`parquet/sessions/${d}: ${code}`);
      continue;
    }
    for (const f of files) {
      if (!f.endsWith('.parquet')) {
        violation(`non-.parquet file parquet/sessions/${d}/${f}`);
        continue;
      }
      const problem = await checkFile(join(root, d, f));
      if (problem === undefined) continue; // gone between listing and opening: fine
      report.filesChecked++;
      if (problem) violation(`parquet/sessions/${d}/${f}: ${problem}`);
    }
  }
}

/** '' when complete, a description when not, undefined when the file vanished before it was opened. */
async function checkFile(path: string): Promise<string | undefined> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const { size } = await fh.stat();
    if (size < 12) return `only ${size} bytes`;
    const head = Buffer.alloc(4);
    const tail = Buffer.alloc(8);
    await fh.read(head, 0, 4, 0);
    await fh.read(tail, 0, 8, size - 8);
    if (!head.equals(MAGIC)) return 'does not start with PAR1';
    if (!tail.subarray(4).equals(MAGIC)) return `does not end with PAR1 (${size} bytes: partial?)`;
    const footer = tail.readUInt32LE(0);
    if (footer + 12 > size) return `footer length ${footer} does not fit in ${size} bytes`;
    return '';
  } finally {
    await fh.close();
  }
}
