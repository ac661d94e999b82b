type InstantFail = (position: number, problem: string, expected: string) => never;

export const INSTANT_FORMATS = 'epoch seconds (1709251200), a date (2024-03-01, midnight UTC) or a date-time (2024-03-01T08:30:00Z, 2024-03-01T10:30+02:00; UTC when no offset is given)';

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/** Epoch seconds, an ISO 8601 date or date-time, as seconds since the UNIX epoch (with any fraction). */
export function parseInstant(text: string, fail: InstantFail): number {
  if (/^[0-9]{1,12}$/.test(text)) return Number(text);
  const m = DATE_TIME.exec(text);
  if (!m) return fail(0, 'unrecognised date', INSTANT_FORMATS);
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const [year, month, day] = [Number(y), Number(mo), Number(d)];
  const check = (ok: boolean, position: number, what: string, range: string): void => {
    if (!ok) fail(position, `${what} out of range`, range);
  };
  check(month >= 1 && month <= 12, 5, 'month', 'a month from 01 to 12');
  const daysInMonth = new Date(utcMillis(year, month, 0)).getUTCDate();
  check(day >= 1 && day <= daysInMonth, 8, 'day', `a day from 01 to ${daysInMonth}`);
  check(Number(h) <= 23, 11, 'hour', 'an hour from 00 to 23');
  check(Number(mi) <= 59, 14, 'minute', 'a minute from 00 to 59');
  check(Number(s) <= 59, 17, 'second', 'a second from 00 to 59');
  let offsetMinutes = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const digits = zone.replace(':', '');
    const oh = Number(digits.slice(1, 3));
    const om = Number(digits.slice(3, 5));
    check(oh <= 18 && om <= 59, text.length - zone.length, 'time-zone offset', 'an offset from -18:00 to +18:00');
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const utc = utcMillis(year, month - 1, day) / 1000 + Number(h) * 3600 + Number(mi) * 60 + Number(s);
  return utc - offsetMinutes * 60 + (frac ? Number(`0${frac}`) : 0);
}

/** `Date.UTC` without its mapping of years 0–99 to 1900–1999. */
function utcMillis(year: number, monthIndex: number, day: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, monthIndex, day);
  return d.getTime();
}
