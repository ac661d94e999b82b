/**
 * CSV read back by an independent reader, Python's `csv` module (as a spreadsheet import or a
 * pandas user would read it), not by the code that wrote it. `delimiter` reads it as a spreadsheet
 * in another locale would (`;` in most European ones, a tab when pasted); strict (an error on a
 * malformed quote) with the comma, lenient as a spreadsheet is with another separator.
 */
import { spawnSync } from 'node:child_process';

const READER = [
  'import csv, io, json, sys',
  'text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", newline="")',
  'print(json.dumps(list(csv.reader(text, delimiter=sys.argv[1], strict=sys.argv[1] == ","))))',
].join('\n');

/** The records of `text` as Python's csv module reads them, each a list of cells. */
export function parseCsvWithPython(text: string, delimiter = ','): string[][] {
  const r = spawnSync('python3', ['-c', READER, delimiter], { input: text, encoding: 'utf8', maxBuffer: 512 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`python3's csv module could not read the CSV: ${r.stderr || r.error?.message}`);
  return JSON.parse(r.stdout) as string[][];
}
