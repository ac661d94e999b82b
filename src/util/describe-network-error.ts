/** What the system error codes of a failed connection mean, in words a person searches for. */
const MEANING: Record<string, string> = {
  ECONNREFUSED: 'connection refused, nothing listens at that address and port',
  ENOTFOUND: 'host not found (check the host name)',
  EAI_AGAIN: 'host name lookup failed (DNS unavailable?)',
  ECONNRESET: 'connection reset by the server',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  CERT_HAS_EXPIRED: 'the server certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the server certificate is self-signed',
  UND_ERR_SOCKET: 'the connection closed unexpectedly',
};

/** A short description of a failed connection: undici's cause code (in words) and message when there is one. */
export function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  if (cause?.code) {
    const meaning = MEANING[cause.code];
    return `${cause.code}${meaning ? `: ${meaning}` : ''}${cause.message ? ` (${cause.message})` : ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}
