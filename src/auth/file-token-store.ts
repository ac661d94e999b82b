import { chmod, mkdir, open, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { readStoredTokens, type StoredTokens } from './stored-tokens.js';
import type { TokenStore } from './token-store.js';
import { ConfigError } from '../config/errors.js';
import { acquireLock } from '../store/lock.js';
import { othersCanRead } from '../util/secret-size.js';
import { writeFileAtomic } from '../util/temp-file.js';

/** The token file used when SESSION_ETL_TOKEN_FILE is not set: `$XDG_CONFIG_HOME/session-etl/tokens.json`, else `~/.config/session-etl/tokens.json`. */
export function defaultTokenFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'session-etl', 'tokens.json');
}

/** Tokens in one JSON file of mode 0600 in a directory of 0700, replaced atomically; `withLock` locks `….lock` beside it. */
export class FileTokenStore implements TokenStore {
  readonly description: string;
  constructor(readonly path: string) {
    this.description = path;
  }

  async load(): Promise<StoredTokens | undefined> {
    let text: string;
    let fh;
    try {
      fh = await open(this.path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    try {
      // The rule of key files (util/secret-size.ts): tokens every user can read (or replace) are refused, not used.
      const problem = othersCanRead((await fh.stat()).mode, this.path, 'a token file');
      if (problem) throw new ConfigError(`token file ${this.path} ${problem}`);
      text = await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
    try {
      return readStoredTokens(JSON.parse(text));
    } catch {
      // A file that is not JSON holds no usable tokens: the user signs in again, which rewrites it.
      return undefined;
    }
  }

  async save(tokens: StoredTokens): Promise<void> {
    await this.secureDir();
    await writeFileAtomic(this.path, JSON.stringify(tokens, null, 2) + '\n', { mode: 0o600, exactMode: true });
  }

  async clear(): Promise<void> {
    await rm(this.path, { force: true });
  }

  async withLock<T>(fn: () => Promise<T>): Promise<T> {
    await this.secureDir();
    // The data directory's lock (store/lock.ts): a holder killed on this host is seen at once, one elsewhere after 30 s.
    const lock = await acquireLock(`${this.path}.lock`, { command: 'token refresh', wait: true, waitTimeoutMs: 20_000, staleMs: 30_000, pollMs: 50 });
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  }

  /** A token directory others may write lets them plant the token file: ours is made 0700, someone else's refused. */
  private async secureDir(): Promise<void> {
    const dir = dirname(this.path);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const st = await stat(dir);
    if ((st.mode & 0o022) === 0) return;
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) {
      throw new Error(
        `the token directory ${dir} can be written by other users and is not yours (mode ${(st.mode & 0o777).toString(8)}): ` +
          'tokens are not kept there; set SESSION_ETL_TOKEN_FILE to a file in a directory only you can write',
      );
    }
    await chmod(dir, 0o700);
  }

  /** The file's permission bits (e.g. 0o600), or undefined when there is no file. */
  async mode(): Promise<number | undefined> {
    try {
      return (await stat(this.path)).mode & 0o777;
    } catch {
      return undefined;
    }
  }
}
