import { Command } from 'commander';
import { keySourceOf } from '../../accounts/resolve.js';
import { defaultTokenFile } from '../../auth/file-token-store.js';
import { KeyFileError } from '../../config/errors.js';
import { describeConfig, loadConfig, type LoadedConfig } from '../../config/load.js';
import { readSecretFile, SecretFileError } from '../../util/secret-size.js';
import { readStateSnapshot } from '../../store/state-snapshot.js';
import { memoryReport } from '../memory-report.js';

export function register(program: Command): void {
  program
    .command('config')
    .description('Print the effective configuration (secrets redacted) and where each value came from')
    .option('--config <file>', 'configuration file; also SESSION_ETL_CONFIG')
    .option('--data-dir <dir>', 'data directory (shown as coming from the command line); also SESSION_ETL_DATA_DIR')
    .option('--json', 'print as JSON')
    .action(async (flags: { config?: string; dataDir?: string; json?: boolean }) => {
      const options = { ...(flags.config ? { configFile: flags.config } : {}), flags: { dataDir: flags.dataDir } };
      // A key file that gives no key is what `config` diagnoses: the configuration is shown with the
      // file marked (exit 0), never the file's content. Every other refused value is still exit 2.
      let keyFile: KeyFileError | null = null;
      let loaded: LoadedConfig;
      try {
        loaded = loadConfig(options);
      } catch (err) {
        if (!(err instanceof KeyFileError)) throw err;
        keyFile = err;
        loaded = loadConfig({ ...options, flags: { ...options.flags, apiKeyFile: null } });
      }
      const rows: Array<{ key: string; value: unknown; source: string; problem?: string }> = describeConfig(loaded);
      if (keyFile) {
        const row = rows.find((r) => r.key === 'apiKeyFile');
        if (row) Object.assign(row, { value: keyFile.path, source: keyFile.setting === 'apiKeyFile' ? 'file' : 'env', problem: `key file ${keyFile.path} ${keyFile.reason}` });
      }
      // A format not given anywhere is the one the data directory recorded (its state snapshot: no lock, no DuckDB).
      const format = rows.find((r) => r.key === 'format');
      if (format?.source === 'default' && !loaded.config.accounts) {
        const recorded = await readStateSnapshot(loaded.config.dataDir).catch(() => null);
        if (recorded) Object.assign(format, { value: recorded.format, source: 'data-dir' });
      }
      // The token store's path when none is set: the default the auth commands use (never "null").
      const tokenFile = rows.find((r) => r.key === 'tokenFile');
      if (tokenFile && tokenFile.value === null) {
        const fromEnv = process.env.SESSION_ETL_TOKEN_FILE;
        Object.assign(tokenFile, fromEnv ? { value: fromEnv, source: 'env' } : { value: defaultTokenFile(), source: 'default' });
      }
      // Each account: where its key comes from (a file or an environment variable, never the key) and its overrides.
      const accounts = Object.entries(loaded.config.accounts ?? {})
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, a]) => {
          const { apiKeyFile: _f, apiKeyEnv: _e, ...overrides } = a;
          const key = keySourceOf(a);
          const problem = key.kind === 'file' ? keyFileProblem(key.path) : process.env[key.name] ? null : 'is not set';
          return {
            name,
            key: key.kind === 'file' ? { from: 'file', path: key.path } : { from: 'env', variable: key.name },
            ...(problem ? { problem } : {}),
            overrides,
          };
        });
      const memory = memoryReport(loaded);
      if (keyFile) process.stderr.write(`warning: key file ${keyFile.path} ${keyFile.reason} (${keyFile.setting}): commands that fetch will refuse to start (exit 2) until it holds the key\n`);
      if (flags.json) {
        process.stdout.write(JSON.stringify({ file: loaded.file, values: rows, ...(accounts.length ? { accounts } : {}), memory: memory.json }) + '\n');
        return;
      }
      const w = Math.max(...rows.map((r) => r.key.length));
      process.stdout.write(`configuration file: ${loaded.file ?? '(none)'}\n`);
      const sourceText = (src: string) => (src === 'data-dir' ? 'recorded in the data directory' : src === 'env-file' ? '.env file' : src);
      for (const r of rows) {
        if (r.key === 'accounts' && accounts.length) continue;
        process.stdout.write(`${r.key.padEnd(w)}  ${JSON.stringify(r.value).padEnd(28)}  ${sourceText(r.source)}${r.problem ? `  UNUSABLE: ${r.problem}` : ''}\n`);
      }
      process.stdout.write(`memory budget: ${memory.text}\n`);
      if (accounts.length) process.stdout.write(`accounts (${accounts.length}; keys are never shown):\n`);
      for (const a of accounts) {
        const key = a.key.from === 'file' ? `key from file ${a.key.path}` : `key from environment variable ${a.key.variable}`;
        process.stdout.write(`  ${a.name}  ${key}${a.problem ? ` (UNUSABLE: it ${a.problem})` : ''}${Object.keys(a.overrides).length ? `  ${JSON.stringify(a.overrides)}` : ''}\n`);
      }
    });
}

/** Why a key file would give no key ("cannot be read: no such file"), or null when it gives one. Its content is never kept. */
function keyFileProblem(path: string): string | null {
  try {
    readSecretFile(path);
    return null;
  } catch (err) {
    if (err instanceof SecretFileError) return err.reason;
    throw err;
  }
}
