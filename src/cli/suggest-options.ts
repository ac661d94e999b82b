/**
 * "Did you mean …?" for an unknown option, knowing the command: commander's nearest spelling can mean
 * something else (`export --from` got `--format`), so names from other tools and the sister command are
 * mapped first. And an unknown option is reported before a missing required one (`backfill --form …`).
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
 * A `preSubcommand` hook: a dry parse (state restored after) finds the first unknown option; a mapped one
 * is reported with its hint, any other left to commander with the required options made optional.
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
