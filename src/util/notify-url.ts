/** The notify URL's secrets: what of it may be shown, and registering the rest for redaction. */
import { registerSecret } from './redact.js';

/** The URL as logs may show it: scheme and host (with port), never path, query or credentials. */
export function receiverOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '(not a URL)';
  }
}

/**
 * Registers the notify URL as a secret (Slack's and Teams' webhook URLs carry their token in the
 * path): the whole URL, its path and query, credentials and query values are redacted wherever
 * they would appear.
 */
export function registerNotifyUrlSecret(url: string | null | undefined): void {
  if (!url) return;
  registerSecret(url);
  try {
    const u = new URL(url);
    registerSecret(u.href);
    const tail = u.pathname + u.search;
    if (tail.length >= 8) registerSecret(tail);
    registerSecret(u.username);
    registerSecret(u.password);
    for (const v of u.searchParams.values()) registerSecret(v);
  } catch {
    // Not a URL: the configuration check reports it.
  }
}
