/**
 * "Did you mean …?" for an unknown option, knowing the command. Commander suggests the nearest
 * spelling, which for a word that means something else is the wrong one (`export --from` got
 * `--format`; export starts at `--since`). The names people bring from other tools and from the
 * sister command are mapped here first; commander's own suggestion answers the rest.
 *
 * Commander also checks required options before unknown ones, so `backfill --form …` said
 * "required option '--from <time>' not specified"; here the unknown option is reported instead.
 */
import type { Command } from 'commander';

const NO_START = 'schedule has no start of its own: set startDate in the configuration file (--config)';
const NO_END = 'export always runs up to now - settle; use backfill --from … --to … for a range';

/** Per command: an option it does not have, and the one it has for that (or what to do instead). */
const ALIASES: Record<string, Record<string, string>> = {
  backfill: {
    '--since': '--from', '--start': '--from', '--start-date': '--from', '--from-date': '--from', '--begin': '--from',
    '--end': '--to', '--until': '--to', '--end-date': '--to', '--to-date': '--to',
  },
  export: {
    '--from': '--since', '--start': '--since', '--start-date': '--since', '--from-date': '--since', '--begin': '--since',
    '--to': NO_END, '--until': NO_END,
  },
  sessions: { '--since': '--from', '--start': '--from', '--until': '--to', '--end': '--to' },
  schedule: { '--since': NO_START, '--start-date': NO_START, '--from': NO_START },
};

/**
 * A `preSubcommand` hook for the program: before a command parses its line, a dry parse (public
 * `parseOptions`, state restored after) finds the first unknown option; a mapped one is reported
 * with its hint, and any other is left to commander with the required options made optional, so
 * that commander reports it rather than the required option it displaced.
 */
export function suggestOptions(program: Command, sub: Command): void {
  if (sub.commands.length > 0) return;
  const { unknown } = sub.parseOptions(program.args.slice(1));
  const missing = sub.options.filter((o) => o.mandatory && sub.getOptionValue(o.attributeName()) === undefined);
  sub.restoreStateBeforeParse();
  const flag = unknown[0];
  if (!flag?.startsWith('-') || unknown.includes('--help') || unknown.includes('-h')) return;
  const known = ALIASES[sub.name()]?.[flag.split('=')[0]!];
  if (known) {
    sub.error(`error: unknown option '${flag}'\n(${known.startsWith('--') ? `Did you mean ${known}?` : known})`, { code: 'commander.unknownOption' });
  }
  for (const option of missing) option.makeOptionMandatory(false);
}
