/** An argument as a POSIX shell reads it back unchanged: as it is when plain, else in single quotes. */
export function quoteArg(s: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
