import { Command } from 'commander';
import { describeConfig, loadConfig } from '../../config/load.js';

export function register(program: Command): void {
  program
    .command('config')
    .description('Print the effective configuration (secrets redacted) and where each value came from')
    .option('--config <file>', 'configuration file; also SESSION_ETL_CONFIG')
    .option('--data-dir <dir>', 'data directory (shown as coming from the command line); also SESSION_ETL_DATA_DIR')
    .option('--json', 'print as JSON')
    .action((flags: { config?: string; dataDir?: string; json?: boolean }) => {
      const loaded = loadConfig({ ...(flags.config ? { configFile: flags.config } : {}), flags: { dataDir: flags.dataDir } });
      const rows = describeConfig(loaded);
      if (flags.json) {
        process.stdout.write(JSON.stringify({ file: loaded.file, values: rows }) + '\n');
        return;
      }
      const w = Math.max(...rows.map((r) => r.key.length));
      process.stdout.write(`configuration file: ${loaded.file ?? '(none)'}\n`);
      for (const r of rows) process.stdout.write(`${r.key.padEnd(w)}  ${JSON.stringify(r.value).padEnd(28)}  ${r.source}\n`);
    });
}
