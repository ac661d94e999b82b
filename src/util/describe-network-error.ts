/**
 * A failed connection in words a person acts on, never fetch's bare "fetch failed", from undici's cause: a system
 * error, an AggregateError of one per address tried, or fetch's refusal of a port it never connects to.
 */
const MEANING: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed (DNS unavailable?)',
  ECONNRESET: 'connection reset by the server',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  CERT_HAS_EXPIRED: 'the server certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the server certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'the server certificate chain holds a self-signed certificate',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the server certificate cannot be verified',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the server certificate is for another host name',
  UND_ERR_SOCKET: 'the connection closed unexpectedly',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
};

interface SystemError {
  code?: string;
  message?: string;
  address?: string;
  port?: number;
  hostname?: string;
  errors?: SystemError[];
}

/** `url` names the host and port when the error itself does not (a blocked port, a lookup failure). */
export function describeNetworkError(err: unknown, url?: string): string {
  const cause = (err as { cause?: unknown })?.cause;
  if (!cause || typeof cause !== 'object') return err instanceof Error ? err.message : String(err);
  const c = cause as SystemError;
  const target = targetOf(url);
  if (c.message === 'bad port') {
    return (
      `port ${target?.port ?? '?'} is one fetch never connects to (blocked as unsafe by the Fetch standard, ` +
      'like 1, 6000 or 10080): use another port'
    );
  }
  const code = c.code ?? c.errors?.find((e) => e.code)?.code;
  if (!code) return c.message ? `${(err as Error).message ?? 'fetch failed'}: ${c.message}` : String((err as Error).message ?? err);
  const where = addressesOf(c) || (target ? `${target.host}:${target.port}` : '');
  // The code first (what people search for), then what it means and where.
  switch (code) {
    case 'ECONNREFUSED':
      return `ECONNREFUSED: connection refused to ${where || 'the server'} (nothing listens there: is it running, and is the port right?)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${code}: ${MEANING[code]}: ${c.hostname ?? target?.host ?? '?'}${code === 'ENOTFOUND' ? ' (check the host name)' : ''}`;
    default:
      return `${code}: ${MEANING[code] ?? 'connection failed'}${where ? ` (${where})` : ''}${!MEANING[code] && c.message ? ` (${c.message})` : ''}`;
  }
}

/** The addresses the connection was tried at: "127.0.0.1:8080", or "127.0.0.1:8080 and [::1]:8080". */
function addressesOf(c: SystemError): string {
  const one = (e: SystemError) => (e.address ? `${e.address.includes(':') ? `[${e.address}]` : e.address}${e.port !== undefined ? `:${e.port}` : ''}` : '');
  const all = [...new Set((c.errors?.length ? c.errors : [c]).map(one).filter(Boolean))];
  return all.length > 1 ? `${all.slice(0, -1).join(', ')} and ${all.at(-1)}` : (all[0] ?? '');
}

function targetOf(url: string | undefined): { host: string; port: string } | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return { host: u.hostname, port: u.port || (u.protocol === 'https:' ? '443' : '80') };
  } catch {
    return undefined;
  }
}
