/**
 * The one CSV dialect the tool writes (docs/data.md "Querying the exported sessions"). Customer names and notes are
 * typed by end customers (CSV injection), and a spreadsheet splitting on `;` or a tab would start a cell inside the
 * text: hence the `'` after a `;`, a tab or a line break too.
 */
const CSV_EOL = '\r\n';
const FORMULA_START = /^[=+\-@\t\r]/;
/** A number there is neutralised too: such a spreadsheet's cell runs on past this cell's end. */
const FORMULA_AFTER_SEPARATOR = /(?<=[;\t\r\n])[=+\-@]/g;
/** A field name written bare in the header (`externalFields.customerName`), never a formula. */
const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;
/** A plain number is no formula. */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** '' for null, a number or a boolean as it is, anything else quoted and neutralised where it would be a formula. */
export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  const s = v instanceof Date ? isoUtc(v.getTime()) : String(v);
  const start = FORMULA_START.test(s) && !NUMBER.test(s) ? `'${s}` : s;
  const safe = start.replace(FORMULA_AFTER_SEPARATOR, (part) => `'${part}`);
  return `"${safe.replace(/"/g, '""')}"`;
}

/** One CSV record: the cells joined by commas, without the line end. */
export function csvRecord(values: readonly unknown[]): string {
  return values.map(csvCell).join(',');
}

/** Epoch seconds (a number, a BIGINT or its text) as an ISO 8601 UTC time without milliseconds; null stays null. */
export function csvTime(epochSeconds: unknown): string | null {
  if (epochSeconds === null || epochSeconds === undefined || epochSeconds === '') return null;
  const ms = Number(epochSeconds) * 1000;
  return Number.isFinite(ms) ? isoUtc(ms) : String(epochSeconds);
}

function isoUtc(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/** The sessions CSV of the CLI and the dashboard; `time[k]`: column k holds epoch seconds. */
export function sessionsCsv(columns: readonly string[], time: readonly boolean[]): { header: string; row(values: readonly unknown[]): string } {
  return {
    header: columns.map((c) => (PLAIN_NAME.test(c) ? c : csvCell(c))).join(',') + CSV_EOL,
    row: (values) => csvRecord(values.map((v, k) => (time[k] ? csvTime(v) : v))) + CSV_EOL,
  };
}
