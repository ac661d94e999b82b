/**
 * "Did you mean …?" for an unknown option, knowing the command. Commander suggests the nearest
 * spelling among the command's options, which for a word that means something else is the wrong
 * one: `export --from` got `--format` (export starts at `--since`), `backfill --start` got `--shard`,
 * and `backfill --since` nothing. The names people bring from other tools (and from the sister
 * command) are mapped here first; commander's spelling suggestion answers the rest.
 *
 * Commander also checks required options before unknown ones, so `backfill --form 2026-01-01 --to …`
 * said "required option '--from <time>' not specified" and never "Did you mean --from?". When a
 * required option is missing and the command line holds an unknown option, the unknown option is
 * reported instead.
 */
import type { Command, Option } from 'commander';

/** Per command: an option it does not have, and the one it has for that (or what to do instead). */
const ALIASES: Record<string, Record<string, string>> = {
  backfill: {
    '--since': '--from', '--start': '--from', '--start-date': '--from', '--from-date': '--from', '--begin': '--from',
    '--end': '--to', '--until': '--to', '--end-date': '--to', '--to-date': '--to',
  },
  export: {
    '--from': '--since', '--start': '--since', '--start-date': '--since', '--from-date': '--since', '--begin': '--since',
    '--to': 'export always runs up to now - settle; use backfill --from … --to … for a range',
    '--until': 'export always runs up to now - settle; use backfill --from … --to … for a range',
  },
  sessions: { '--since': '--from', '--start': '--from', '--until': '--to', '--end': '--to' },
  schedule: {
    '--since': 'schedule has no start of its own: set startDate in the configuration file (--config)',
    '--start-date': 'schedule has no start of its own: set startDate in the configuration file (--config)',
    '--from': 'schedule has no start of its own: set startDate in the configuration file (--config)',
  },
};

// Both methods are commander's own (lib/command.js) but missing from its type declarations.
interface CommanderInternals {
  args: string[];
  options: readonly Option[];
  missingMandatoryOptionValue(option: Option): void;
  unknownOption(flag: string): void;
  error(message: string, o: { code: string }): never;
}

/** Installs both on a command: the command-aware suggestions, and unknown options reported before missing required ones. */
export function suggestBeforeRequired(cmd: Command): void {
  const c = cmd as unknown as CommanderInternals;
  const missing = c.missingMandatoryOptionValue.bind(c);
  const unknown = c.unknownOption.bind(c);
  c.unknownOption = (flag) => {
    const known = ALIASES[cmd.name()]?.[flag.split('=')[0]!];
    if (!known) return unknown(flag);
    const hint = known.startsWith('--') ? `Did you mean ${known}?` : known;
    c.error(`error: unknown option '${flag}'\n(${hint})`, { code: 'commander.unknownOption' });
  };
  c.missingMandatoryOptionValue = (option) => {
    const stray = c.args.map((a) => a.split('=')[0]!).find((a) => a.startsWith('--') && !c.options.some((o) => o.long === a));
    if (stray) c.unknownOption(stray);
    else missing(option);
  };
}
