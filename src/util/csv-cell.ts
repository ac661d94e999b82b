/**
 * The one CSV dialect the tool writes (`sessions --output csv` and the dashboard's download), as
 * docs/data.md "Querying the exported sessions" states it: RFC 4180 with CRLF, text cells quoted,
 * times in ISO 8601 UTC, and no formula a spreadsheet would run. Customer names and notes are typed
 * by end customers (OWASP's CSV-injection rule), and a spreadsheet splitting on `;` or a tab would
 * start a cell inside the text: hence the `'` after a `;`, a tab or a line break too.
 */

/** The line end of every record (RFC 4180). */
export const CSV_EOL = '\r\n';

/** A cell a spreadsheet would read as a formula. */
const FORMULA_START = /^[=+\-@\t\r]/;
/**
 * A formula character after a separator a spreadsheet may split on (`;`, a tab, a line break): a
 * number there is neutralised too, as such a spreadsheet's cell runs on past this cell's end.
 */
const FORMULA_AFTER_SEPARATOR = /(?<=[;\t\r\n])[=+\-@]/g;
/** A field name written bare in the header: letters, digits, `_` and `.` (`externalFields.customerName`), never a formula. */
const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;
/** A whole cell that is a plain number (sign, digits, a decimal point, an exponent): no formula. */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * `v` as one CSV cell: '' for null, a number or a boolean as it is, text (anything else) quoted,
 * neutralised where a spreadsheet would read a formula.
 */
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

/**
 * The writer of the sessions CSV, for both the CLI and the dashboard: `header` is the header
 * line, `row` one session's line from its value per column (`time[k]`: column k holds epoch seconds,
 * written as an ISO time). Each line ends with CRLF.
 */
export function sessionsCsv(columns: readonly string[], time: readonly boolean[]): { header: string; row(values: readonly unknown[]): string } {
  return {
    header: columns.map((c) => (PLAIN_NAME.test(c) ? c : csvCell(c))).join(',') + CSV_EOL,
    row: (values) => csvRecord(values.map((v, k) => (time[k] ? csvTime(v) : v))) + CSV_EOL,
  };
}
