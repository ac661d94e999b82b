/** Seconds in a day: the unit every test's windows, ranges and emulator spans are counted in. */
export const D = 86_400;

/** The UTC day (YYYY-MM-DD) of an epoch second: how `--from-date`, `date=` partitions and reports name a day. */
export const isoDay = (t: number): string => new Date(t * 1000).toISOString().slice(0, 10);
