import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { accountNames, hasAccounts, refuseAccountsDir } from '../../accounts/resolve.js';
import { loadConfig, type LoadedConfig } from '../../config/load.js';
import { asUsage, UsageError } from '../usage-error.js';
import { DEMO_MARKER } from './demo.js';

interface DashboardFlags {
  dataDir?: string;
  parquetUrl?: string;
  config?: string;
  port: string;
  host: string;
  tokenFile?: string;
  maxLag?: string;
  sessionTtl?: string;
  account?: string;
}

export function register(program: Command): void {
  program
    .command('dashboard')
    .description(
      'Serve a read-only web page of the data directory: health, coverage calendar with the command for each hole, runs, charts, a sessions query box. ' +
        'Never takes the lock or opens the DuckDB file: runs go on beside it',
    )
    .option('--data-dir <dir>', 'data directory; also SESSION_ETL_DATA_DIR (default ./data)')
    .option('--parquet-url <s3-url>', 'the dataset is in a bucket (s3://BUCKET/PREFIX): the page reads a local copy, brought up to date every 30 s; also SESSION_ETL_PARQUET_URL')
    .option('--config <file>', 'configuration file (maxLag, scheduleCron, scheduleTimezone)')
    .option('--port <n>', 'TCP port; 0 picks a free one', '8787')
    .option('--host <address>', 'address to listen on; anything but loopback requires a fixed access token (--token-file or SESSION_ETL_DASHBOARD_TOKEN)', '127.0.0.1')
    .option('--token-file <file>', `file holding a fixed access token (mode 0600); else the environment's SESSION_ETL_DASHBOARD_TOKEN; else a new one each start, printed in the address`)
    .option('--account <name>', 'with an accounts map: the account to show (else, with several, the page lists every account and opens each one\'s view)')
    .option('--session-ttl <duration>', 'how long a browser session lasts from opening the printed address; then the page asks for it again (default 12h)', '12h')
    .option('--max-lag <duration>', 'a checkpoint further behind now is shown as lagging (default: the configuration\'s maxLag, 26h)')
    .action(async (flags: DashboardFlags) => {
      const port = Number(flags.port);
      if (!/^\d+$/.test(flags.port.trim()) || port > 65_535) throw new UsageError(`--port must be a whole number from 0 to 65535, got ${JSON.stringify(flags.port)}`);
      const loaded = loadConfig({ ...(flags.config ? { configFile: flags.config } : {}), flags: { dataDir: flags.dataDir, parquetUrl: flags.parquetUrl } });
      const { config } = loaded;
      const chosen = chooseAccount(loaded, flags.account);
      const account = typeof chosen === 'string' ? chosen : null;
      // No accounts map: a data directory of many accounts shows the accounts its store holds.
      const held = chosen === null ? await (await import('../../accounts/stores.js')).heldAccounts(config.dataDir) : null;
      if (held?.length === 0) await (await import('../../accounts/stores.js')).refuseHeldAccounts(config.dataDir, 'the account to show');
      const allNames = Array.isArray(chosen) ? chosen : held;
      if (allNames && config.parquetUrl) {
        throw new UsageError(`with --parquet-url (or parquetUrl), the dashboard shows one account: give --account NAME (one of ${allNames.join(', ')})`);
      }
      const { parseDuration } = await import('../../time/windows.js');
      const maxLagSeconds = asUsage(() => parseDuration(flags.maxLag ?? config.maxLag, '--max-lag'));
      const sessionTtlSeconds = asUsage(() => parseDuration(flags.sessionTtl ?? '12h', '--session-ttl'));
      let isDir = false;
      try {
        // With a bucket, the data directory only keeps the page's copy of it: made when missing.
        if (config.parquetUrl) mkdirSync(config.dataDir, { recursive: true, mode: 0o750 });
        isDir = statSync(config.dataDir).isDirectory();
      } catch {}
      if (!isDir) {
        throw new UsageError(`the data directory ${config.dataDir} does not exist (or is not a directory): give --data-dir, or run a backfill into it first`);
      }

      const { generateAccessToken, loadAccessToken, TokenSetupError, TOKEN_ENV } = await import('../../dashboard/access-token.js');
      const { isLoopback, startDashboard } = await import('../../dashboard/server.js');
      const { redact, registerSecret } = await import('../../util/redact.js');
      const fixedToken = asUsage(
        () => loadAccessToken(flags.tokenFile ? { tokenFile: flags.tokenFile } : {}),
        (err) => err instanceof TokenSetupError,
      );
      if (!isLoopback(flags.host) && fixedToken === null) {
        throw new UsageError(
          `--host ${flags.host} makes the page (customer names, IPs, notes) reachable from other machines: set an access token in ${TOKEN_ENV} or --token-file (mode 0600), e.g. openssl rand -hex 24`,
        );
      }
      // Without a fixed token, a new one for this start, written only in the address printed below.
      const token = fixedToken ?? generateAccessToken();
      registerSecret(token);
      const duckdbMemoryLimit = await dashboardDuckdbLimit(loaded);
      const { sourceOfDataDir } = await import('../../dashboard/data-source.js');
      const { nextScheduledRun } = await import('../../dashboard/next-run.js');
      const { ExitCode } = await import('../exit-codes.js');
      let dashboard;
      try {
        dashboard = await startDashboard({
          source: allNames ? sourceOfDataDir(config.dataDir) : await bucketSource(config, account ? await accountSource(config.dataDir, account) : sourceOfDataDir(config.dataDir)),
          ...(account ? { account: { name: account, ...(flags.config ? { configArg: flags.config } : {}) } } : {}),
          // Several accounts and no --account: the all-accounts page, each account's page under /?account=NAME.
          ...(allNames
            ? { allAccounts: { names: allNames, sourceOf: (name: string) => accountSource(config.dataDir, name), ...(flags.config && Array.isArray(chosen) ? { configArg: flags.config } : {}) } }
            : {}),
          host: flags.host,
          port,
          token,
          duckdbMemoryLimit,
          sessionTtlMs: sessionTtlSeconds * 1000,
          maxLagSeconds,
          nextRun: (nowMs) => nextScheduledRun(config.scheduleCron, config.scheduleTimezone, nowMs),
          ...(flags.dataDir ? { dataDirArg: flags.dataDir } : {}),
          // `session-etl demo`'s directory: its emulator ended with the demo, so no command can fill its gaps.
          demo: !account && !allNames && existsSync(join(config.dataDir, DEMO_MARKER)),
          onError: (err) => process.stderr.write(`dashboard: a request failed: ${redact(String((err as Error)?.stack ?? err))}\n`),
        });
      } catch (err) {
        if ((err as Error).name === 'SharedDirectoryError') throw new UsageError((err as Error).message);
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') {
          throw new UsageError(`cannot listen on ${flags.host}:${port} (${code}): choose another --port (0 picks a free one) or --host`);
        }
        throw err;
      }
      // A fixed token is the user's own: never printed. A new one is, in the address to open.
      process.stdout.write(`Dashboard: ${dashboard.url}${fixedToken === null ? `?token=${token}` : ''}\n`);
      process.stderr.write(
        `serving ${config.dataDir}${account ? ` (account ${account})` : allNames ? ` (all ${allNames.length} accounts: ${dashboard.url} lists them)` : ''} read-only; ` +
          (fixedToken === null
            ? `open the address above (its token is new at each start; the page keeps a session for that tab, ${flags.sessionTtl ?? '12h'} at most)`
            : `open ${dashboard.url}?token=<your token>, or send Authorization: Bearer <your token>`) +
          '; Ctrl-C to stop\n',
      );
      await new Promise<void>((resolve) => {
        const stop = (signal: NodeJS.Signals) => {
          process.exitCode = signal === 'SIGINT' ? ExitCode.sigint : ExitCode.sigterm;
          void dashboard.close().then(resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}

/**
 * DuckDB's memory_limit for the page: three fifths of what the memory budget leaves beyond Node's fixed part,
 * at most 1 GiB and at least 256 MiB (at 128 MiB, the page's six concurrent queries failed with "Out of Memory"
 * on a 110 k-session store); SESSION_ETL_DUCKDB_MEMORY_LIMIT replaces it.
 */
async function dashboardDuckdbLimit(loaded: LoadedConfig): Promise<string> {
  const { chooseBudget, FIXED_BYTES, MemoryBudgetError, MiB, parseSize, readCgroupLimit } = await import('../../config/memory-budget.js');
  const { memorySettingName } = await import('../run-options.js');
  const override = process.env.SESSION_ETL_DUCKDB_MEMORY_LIMIT?.trim();
  const c = loaded.config;
  return asUsage(() => {
    if (override) return `${Math.floor(parseSize(override, 'SESSION_ETL_DUCKDB_MEMORY_LIMIT') / MiB)}MiB`;
    const name = memorySettingName(loaded);
    const setting = c.memoryLimit !== null && c.memoryLimit !== undefined ? { bytes: parseSize(c.memoryLimit, name), name } : undefined;
    const budget = chooseBudget(readCgroupLimit(), setting);
    const share = Math.floor(((budget.bytes - FIXED_BYTES) * 0.6) / MiB);
    return `${Math.min(1024, Math.max(256, share))}MiB`;
  }, (err) => err instanceof MemoryBudgetError);
}

/**
 * The account a dashboard shows: with an accounts map, the one --account names (or the only one), else
 * every one's name; without one, none (a directory of accounts in the layout before schema 3 is refused).
 */
function chooseAccount(loaded: LoadedConfig, named: string | undefined): string | string[] | null {
  if (!hasAccounts(loaded)) {
    if (named !== undefined) throw new UsageError('--account needs an accounts map in the configuration file (docs/accounts.md); none is configured');
    refuseAccountsDir(loaded.config.dataDir);
    return null;
  }
  const names = accountNames(loaded);
  if (named === undefined) return names.length === 1 ? names[0]! : names;
  if (!names.includes(named)) throw new UsageError(`--account ${named} is not configured; the accounts are: ${names.join(', ')}`);
  return named;
}

async function accountSource(root: string, account: string): Promise<{ stateDir: string; parquetRoot: string; account: string }> {
  const { shardCount, storeFor } = await import('../../accounts/stores.js');
  const { layoutOf } = await import('../../store/layout.js');
  const layout = layoutOf(root, 'both', storeFor(account, await shardCount(root)));
  return { stateDir: layout.storeDir, parquetRoot: layout.parquetDir, account };
}

/**
 * With the dataset in a bucket, where the page reads: a local copy of it (mirrored now and every 30 s),
 * and this machine's store state or, when the runs happen elsewhere, a copy of the bucket's.
 */
async function bucketSource<S extends { stateDir: string; parquetRoot: string }>(config: { dataDir: string; parquetUrl?: string | null; s3PathStyle: boolean }, source: S): Promise<S> {
  if (!config.parquetUrl) return source;
  const { parseParquetUrl } = await import('../../store/dataset/location.js');
  const { bucketCacheDir, copyBucketState, mirrorDataset } = await import('../../store/dataset/bucket-reader.js');
  const { refuseSharedDirectory, unguessable } = await import('../../util/temp-file.js');
  const { existsSync } = await import('node:fs');
  const { mkdir, rename } = await import('node:fs/promises');
  const { join, relative } = await import('node:path');
  const location = parseParquetUrl(config.parquetUrl, config.s3PathStyle);
  if (location.kind !== 's3') return source;
  const cache = bucketCacheDir(config.dataDir);
  const here = existsSync(join(source.stateDir, 'sessions.duckdb')) || existsSync(join(source.stateDir, 'state.duckdb'));
  const store = relative(config.dataDir, source.stateDir);
  const stateDir = here ? source.stateDir : join(cache, 'state', store);
  const refresh = async () => {
    await mirrorDataset(location, join(cache, 'dataset'));
    if (here) return;
    await refuseSharedDirectory(stateDir, 'directory of the bucket state\'s local copy');
    await mkdir(stateDir, { recursive: true, mode: 0o750 });
    for (const name of ['state.duckdb', 'state.json'] as const) {
      // A new file under an unguessable name, never through a link planted at it (util/temp-file.ts).
      const tmp = join(stateDir, `.${name}.${unguessable()}.part`);
      if (await copyBucketState(location, store, name, tmp)) await rename(tmp, join(stateDir, name));
    }
  };
  await refresh();
  setInterval(() => void refresh().catch((err: unknown) => process.stderr.write(`dashboard: could not bring the copy of ${location.url} up to date: ${(err as Error).message}\n`)), 30_000).unref();
  return { ...source, stateDir, parquetRoot: join(cache, 'dataset') };
}
