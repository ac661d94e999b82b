/** A short description of a failed connection: undici's cause code and message when there is one. */
export function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return err instanceof Error ? err.message : String(err);
}
