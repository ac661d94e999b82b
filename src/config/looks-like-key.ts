/**
 * Whether a value given as a variable name or a file path (apiKeyEnv, apiKeyFile) looks like a key
 * pasted in its place: `config`, `accounts list`, errors, notifications and /healthz print those
 * settings, so a key there would be shown everywhere. Refused values are never echoed.
 *
 * Random keys switch between lower case, upper case and digits at most characters; names, words
 * and dates do not (ACME_REPORTING_KEY, MyReportingKey, backup20240101). The rule: a run of 16 or
 * more letters and digits that switches between letters and digits 4 times or more, or between
 * lower case, upper case and digits at half its characters or more. For a path, the rule is applied
 * to the file's own name (directories may have random names); a file named by a hash (hex) is taken
 * for a key too: link it under another name. A key written in `_`-separated groups
 * (`Kx9mP2qL_7vR4nT8_…`, each group shorter than 16) is taken as one run, its switches counted within
 * the groups only: a variable name's words and numbers (SHARD_1_OF_4_KEY, Acme_Prod_Key) switch at
 * the `_` and hardly inside.
 */
export function looksLikeKey(value: string): boolean {
  for (const run of value.match(/[A-Za-z0-9_]+/g) ?? []) {
    if (random(run.match(/[A-Za-z0-9]{16,}/g) ?? []) || random([run.replace(/^_+|_+$/g, '')], '_')) return true;
  }
  return false;
}

/**
 * Whether one of `runs` is shaped like a random key (the rule above); with `gap`, a run's pieces
 * between `gap` characters count as one run, with no switch across a gap.
 */
function random(runs: readonly string[], gap?: string): boolean {
  for (const run of runs) {
    const pieces = gap === undefined ? [run] : run.split(gap);
    const length = pieces.reduce((n, p) => n + p.length, 0);
    if (length < 16) continue;
    let digitSwitches = 0;
    let switches = 0;
    for (const piece of pieces) {
      for (let i = 1; i < piece.length; i++) {
        const a = classOf(piece.charCodeAt(i - 1));
        const b = classOf(piece.charCodeAt(i));
        if (a !== b) {
          switches++;
          if (a === DIGIT || b === DIGIT) digitSwitches++;
        }
      }
    }
    if (digitSwitches >= 4 || switches >= (length - 1) / 2) return true;
  }
  return false;
}

const DIGIT = 0;
const LOWER = 1;
const UPPER = 2;

function classOf(c: number): number {
  return c >= 48 && c <= 57 ? DIGIT : c >= 97 && c <= 122 ? LOWER : UPPER;
}

/** Why `value` cannot be a file path, or null: control characters, surrounding spaces, length. */
export function pathProblem(value: string): string | null {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(value)) return 'it holds control characters (a line break, a tab), which no path here has';
  if (value !== value.trim()) return 'it starts or ends with a space';
  if (value.length > 4096) return 'it is longer than 4,096 characters, longer than any path';
  return null;
}
