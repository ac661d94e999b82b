#!/usr/bin/env node
// `npm ci`'s `prepare` and `npm start`'s prestart: compiles the TypeScript (`npm run build`) only when dist/ is missing or
// older than what it is built from, so that `npm ci && npm start` builds once (in `npm ci`'s
// `prepare`: on a fresh clone, where dist/ is missing), the first `npx session-etl` of a clone
// (npx installs the clone's directory, running `prepare` again) builds nothing, and `npm start`
// after an edit of a source file builds again before it runs.
// Inputs: the build's tsconfig files, package.json and every file under the folders the build
// includes (tsconfig.build.json's "include"). Output: dist/src/cli/main.js, which every build writes.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
}

/** The newest modification time of `path` and everything under it (links not followed). */
function newest(path) {
  let st;
  try {
    st = statSync(path);
  } catch {
    return -1;
  }
  if (!st.isDirectory()) return st.mtimeMs;
  let t = st.mtimeMs; // a file deleted or renamed changes its directory
  for (const name of readdirSync(path)) t = Math.max(t, newest(join(path, name)));
  return t;
}

// An installed package (npm pack's tarball) ships dist/ built and none of the sources: nothing to build.
if (mtime(join(root, 'tsconfig.build.json')) < 0) process.exit(0);
const include = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8')).include ?? [];
const inputs = ['tsconfig.json', 'tsconfig.build.json', 'package.json', ...include];
const built = mtime(join(root, 'dist', 'src', 'cli', 'main.js'));
const source = Math.max(...inputs.map((p) => newest(join(root, p))));
if (built >= 0 && built >= source) process.exit(0);
process.stderr.write(built < 0 ? 'dist/ is not built yet: building\n' : 'sources changed since the last build: building\n');
const r = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
