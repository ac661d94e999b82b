/** Where session-etl's package.json is: found upwards from this file (src/util, or dist/src/util when built). */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let found: string | undefined;

/** The directory holding session-etl's package.json. Throws when there is none above this file. */
export function packageRoot(): string {
  if (found !== undefined) return found;
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, 'package.json'))) {
    const up = dirname(d);
    if (up === d) throw new Error('cannot find the session-etl package directory (package.json)');
    d = up;
  }
  return (found = d);
}
