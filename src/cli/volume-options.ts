/** The volume-anomaly flags of `status` and the run commands (docs/data-quality.md "Volume anomalies"), and their rule. */
import type { Command } from 'commander';
import type { Config } from '../config/schema.js';
import type { VolumeRule } from '../store/volume-anomalies.js';
import { UsageError } from './usage-error.js';

export interface VolumeFlags {
  volumeAnomalyThreshold?: string;
  volumeAnomalyWeeks?: string;
  volumeAnomalyMinSessions?: string;
}

export function addVolumeOptions(cmd: Command): Command {
  return cmd
    .option('--volume-anomaly-threshold <x>', 'a finished day below this fraction of its weekday\'s median is a volume anomaly; 0 turns the check off (default 0.5)')
    .option('--volume-anomaly-weeks <n>', 'previous same weekdays whose median is a day\'s expected count (default 4)')
    .option('--volume-anomaly-min-sessions <n>', 'days expected to hold fewer sessions are not judged (default 20)');
}

/** A flag's number (`whole`: an integer), undefined when not given. */
export function num(v: string | undefined, flag: string, whole = false): number | undefined {
  if (v === undefined) return undefined;
  const ok = whole ? /^-?\d+$/.test(v.trim()) : v.trim() !== '' && Number.isFinite(Number(v));
  if (!ok) throw new UsageError(`${flag} must be a ${whole ? 'whole number' : 'number'}, got ${JSON.stringify(v)}`);
  return Number(v);
}

/** The flags as configuration values (the schema checks their ranges, naming the key). */
export function volumeConfigFlags(flags: VolumeFlags): Partial<Record<keyof Config, unknown>> {
  return {
    volumeAnomalyThreshold: num(flags.volumeAnomalyThreshold, '--volume-anomaly-threshold'),
    volumeAnomalyWeeks: num(flags.volumeAnomalyWeeks, '--volume-anomaly-weeks'),
    volumeAnomalyMinSessions: num(flags.volumeAnomalyMinSessions, '--volume-anomaly-min-sessions'),
  };
}

export function volumeRuleOf(c: Pick<Config, 'volumeAnomalyThreshold' | 'volumeAnomalyWeeks' | 'volumeAnomalyMinSessions'>): VolumeRule {
  return { threshold: c.volumeAnomalyThreshold, weeks: c.volumeAnomalyWeeks, minSessions: c.volumeAnomalyMinSessions };
}
