/** A length of time for a person (`status`, /healthz): the two largest whole units — `1d 2h`, `39m`, `10m 5s`, `1s`. */
export function humanDuration(seconds: number): string {
  const units: Array<[string, number]> = [['d', 86_400], ['h', 3_600], ['m', 60], ['s', 1]];
  const parts: string[] = [];
  let rest = Math.max(0, Math.round(seconds));
  for (const [u, k] of units) {
    if (rest >= k || (u === 's' && !parts.length)) {
      parts.push(`${Math.floor(rest / k)}${u}`);
      rest %= k;
    } else if (parts.length) break; // 1d 0h 5m is 1d, not 1d 5m
    if (parts.length === 2) break;
  }
  return parts.join(' ');
}
