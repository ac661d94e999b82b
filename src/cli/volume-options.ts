/**
 * The volume-anomaly flags (docs/data-quality.md "Volume anomalies") of `status` and the run commands, and the
 * rule they and the configuration make.
 */
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

/** The flags as configuration values (the schema checks their ranges, naming the key). */
export function volumeConfigFlags(flags: VolumeFlags): Partial<Record<keyof Config, unknown>> {
  const num = (v: string | undefined, flag: string) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${flag} must be a number, got ${JSON.stringify(v)}`);
    return n;
  };
  return {
    volumeAnomalyThreshold: num(flags.volumeAnomalyThreshold, '--volume-anomaly-threshold'),
    volumeAnomalyWeeks: num(flags.volumeAnomalyWeeks, '--volume-anomaly-weeks'),
    volumeAnomalyMinSessions: num(flags.volumeAnomalyMinSessions, '--volume-anomaly-min-sessions'),
  };
}

export function volumeRuleOf(c: Pick<Config, 'volumeAnomalyThreshold' | 'volumeAnomalyWeeks' | 'volumeAnomalyMinSessions'>): VolumeRule {
  return { threshold: c.volumeAnomalyThreshold, weeks: c.volumeAnomalyWeeks, minSessions: c.volumeAnomalyMinSessions };
}
