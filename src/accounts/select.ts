/**
 * Which accounts a command works on: all, those named with --account, or a shard (--shard I/N: FNV-1a
 * 32 of the UTF-8 name modulo N is I, stated in docs/accounts.md so that every tool cuts the same shards).
 */
import { ConfigError as UsageError } from '../config/errors.js';
import { didYouMean } from '../util/did-you-mean.js';

/** FNV-1a, 32 bits, over the UTF-8 bytes of `text`: offset basis 2166136261, prime 16777619. */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The shard an account belongs to among `count` shards. */
export function shardOf(name: string, count: number): number {
  return fnv1a32(name) % count;
}

export interface Shard {
  index: number;
  count: number;
}

/** Parses --shard I/N (0 ≤ I < N, N ≥ 1); UsageError (exit 2) otherwise. */
export function parseShard(text: string): Shard {
  const m = /^\s*(\d{1,6})\s*\/\s*(\d{1,6})\s*$/.exec(text);
  if (!m) throw new UsageError(`--shard must be I/N, such as 0/4 (shard I of N, counted from 0), got ${JSON.stringify(text)}`);
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (count < 1) throw new UsageError(`--shard ${text}: N (the number of shards) must be at least 1`);
  if (index >= count) throw new UsageError(`--shard ${text}: I must be from 0 to ${count - 1} (shards are counted from 0)`);
  return { index, count };
}

/** The configured accounts (sorted) a command works on; an unknown --account is a UsageError naming the configured ones. */
export function selectAccounts(configured: readonly string[], named: readonly string[] = [], shard?: Shard): string[] {
  const all = [...configured].sort();
  if (all.length === 0) throw new UsageError('no accounts are configured: --account and --shard need an `accounts` map in the configuration file (docs/accounts.md)');
  const unknown = named.filter((n) => !all.includes(n));
  if (unknown.length) {
    const shown = all.length > 20 ? `${all.slice(0, 20).join(', ')}, … (${all.length} in all)` : all.join(', ');
    const named = unknown.map((n) => `${JSON.stringify(n)}${didYouMean(n, all)}`);
    throw new UsageError(`no account called ${named.join(', ')} in the configuration; configured: ${shown}`);
  }
  let chosen = named.length ? all.filter((n) => named.includes(n)) : all;
  if (shard) chosen = chosen.filter((n) => shardOf(n, shard.count) === shard.index);
  return chosen;
}
