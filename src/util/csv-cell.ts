/**
 * One CSV cell as every CSV the tool writes has it (`sessions --output csv`, the dashboard's
 * download): RFC 4180 quoting, and no formula a spreadsheet would run. Customer names and notes are
 * typed by end customers, so a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return
 * gets a leading `'` (OWASP's CSV-injection rule), unless the whole cell is a number: `-1+HYPERLINK(…)`
 * is neutralised, `-12.5` is left as it is.
 */

/** A cell a spreadsheet would read as a formula. */
const FORMULA_START = /^[=+\-@\t\r]/;
/** A whole cell that is a plain number (sign, digits, a decimal point, an exponent): no formula. */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** `v` as one CSV cell: '' for null, neutralised when it would start a formula, quoted when needed. */
export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  const safe = FORMULA_START.test(s) && !NUMBER.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** One CSV record: the cells joined by commas, without the line end. */
export function csvRecord(values: readonly unknown[]): string {
  return values.map(csvCell).join(',');
}
