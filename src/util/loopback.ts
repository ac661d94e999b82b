/**
 * Loopback names, for the servers that listen on loopback only (the dashboard, the scheduler's
 * /metrics and /healthz): a page on another site reaching them by a name it controls (DNS
 * rebinding) sends its own Host, which such a server refuses before anything else.
 */
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The host of a Host header without its port (`[::1]:8787` → `[::1]`). */
export function hostOfHeader(header: string | undefined): string {
  return (header ?? '').replace(/:\d+$/, '');
}
