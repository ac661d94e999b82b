/**
 * Commander checks required options before unknown ones, so `backfill --form 2026-01-01 --to …`
 * said "required option '--from <time>' not specified" and never "Did you mean --from?". When a
 * required option is missing and the command line holds an unknown option, report the unknown
 * option instead: commander's message for it carries the did-you-mean suggestion.
 */
import type { Command, Option } from 'commander';

// Both methods are commander's own (lib/command.js) but missing from its type declarations.
interface CommanderInternals {
  args: string[];
  options: readonly Option[];
  missingMandatoryOptionValue(option: Option): void;
  unknownOption(flag: string): void;
}

export function suggestBeforeRequired(cmd: Command): void {
  const c = cmd as unknown as CommanderInternals;
  const missing = c.missingMandatoryOptionValue.bind(c);
  c.missingMandatoryOptionValue = (option) => {
    const unknown = c.args.map((a) => a.split('=')[0]!).find((a) => a.startsWith('--') && !c.options.some((o) => o.long === a));
    if (unknown) c.unknownOption(unknown);
    else missing(option);
  };
}
