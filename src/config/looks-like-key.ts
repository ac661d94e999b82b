/**
 * Whether a variable name or file path (apiKeyEnv, apiKeyFile: printed everywhere) looks like a key pasted in its
 * place (docs/accounts.md): random keys switch between lower case, upper case and digits at most characters. A key
 * in `_`-separated groups is one run, its switches counted within the groups (a variable name switches at the `_`).
 */
export function looksLikeKey(value: string): boolean {
  for (const run of value.match(/[A-Za-z0-9_]+/g) ?? []) {
    if (random(run.match(/[A-Za-z0-9]{16,}/g) ?? []) || random([run.replace(/^_+|_+$/g, '')], '_')) return true;
  }
  return false;
}

/** Whether one of `runs` is shaped like a random key; with `gap`, a run's pieces between gaps count as one run. */
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
