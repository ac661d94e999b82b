/** The `session-etl` command line: one file per command; heavy modules load inside the actions, so `--help` stays fast. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { setDotEnvNames } from '../config/load.js';
import { dropOutputOnEpipe } from './epipe.js';
import { ExitCode } from './exit-codes.js';
import { reportFailure } from './report-failure.js';
import { suggestOptions } from './suggest-options.js';
import { packageRoot } from '../util/package-root.js';

type Registrar = { register(program: Command): void };

const COMMANDS: Array<() => Promise<Registrar>> = [
  () => import('./commands/demo.js'),
  () => import('./commands/backfill.js'),
  () => import('./commands/export.js'),
  () => import('./commands/verify.js'),
  () => import('./commands/status.js'),
  () => import('./commands/schedule.js'),
  () => import('./commands/config.js'),
  () => import('./commands/sessions.js'),
  () => import('./commands/emulator.js'),
  () => import('./commands/auth.js'),
  () => import('./commands/whoami.js'),
  () => import('./commands/session.js'),
  () => import('./commands/dashboard.js'),
  () => import('./commands/accounts.js'),
];

export async function main(argv: string[] = process.argv): Promise<number> {
  // Nothing we write (DuckDB's own files included) is readable by others or writable by the group,
  // whatever the umask (docs/design.md "What is stored in depth"); a stricter umask stays as it is.
  process.umask(process.umask(0o027) | 0o027);
  // A .env file in the working directory is read if present (the environment still wins); `config` names what came from it.
  if (existsSync('.env')) {
    const before = new Set(Object.keys(process.env));
    process.loadEnvFile('.env');
    setDotEnvNames(Object.keys(process.env).filter((k) => !before.has(k)));
  }
  const program = new Command('session-etl')
    .description('Export remote-support session records from the GraphQL reporting endpoint into DuckDB and Parquet.')
    .version(packageVersion(), '-V, --version', 'print the version (also -v)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .hook('preSubcommand', suggestOptions);
  for (const load of COMMANDS) (await load()).register(program);
  // `-v` is what most tools take for the version (commander's is -V): both print it.
  const args = argv[2] === '-v' ? [...argv.slice(0, 2), '-V', ...argv.slice(3)] : argv;
  try {
    await program.parseAsync(args);
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version are not errors; every other parse error is a usage error.
      return ['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(err.code) ? ExitCode.ok : ExitCode.usage;
    }
    return reportFailure(err);
  }
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

dropOutputOnEpipe(process.stdout);
dropOutputOnEpipe(process.stderr);
const code = await main();
process.exitCode = code;
