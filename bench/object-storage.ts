/**
 * Case 9 (issue 30; docs/object-storage.md): the 1 M-session backfill into a bucket on loopback
 * (s3rver over a directory, as the tests use) against the same backfill into a local directory, run
 * alternately against one warm emulator: the ratio of their times. Format both (the table in the data
 * directory, the day files uploaded), and once format parquet (the state kept in the bucket too).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import S3rver from 's3rver';

export interface ObjectStorageContext<Run extends { wallMs: number; cpuMs: number; maxRssBytes: number; summary: { sessions: { written: number } } }> {
  work: string;
  /** A backfill of the bench's range into `dataDir` (extra flags), with extra environment. */
  backfill(dataDir: string, extra: string[], env: Record<string, string>): Promise<Run>;
  row(r: { section: string; measure: string; value: string; goal?: string; met?: boolean }): void;
  log(s: string): void;
  secs(ms: number): string;
  mb(bytes: number): string;
  fmt(n: number, digits?: number): string;
}

export async function objectStorageCase<Run extends { wallMs: number; cpuMs: number; maxRssBytes: number; summary: { sessions: { written: number } } }>(
  ctx: ObjectStorageContext<Run>,
): Promise<void> {
  const dir = await mkdtemp(join(ctx.work, 's3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', directory: dir, silent: true, configureBuckets: [{ name: 'bench' }] });
  const { port } = (await server.run()) as AddressInfo;
  const env = {
    AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}`,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    SESSION_ETL_S3_PATH_STYLE: 'true',
  };
  const section = '9 object storage';
  try {
    const local: Run[] = [];
    const bucket: Run[] = [];
    for (let i = 0; i < 2; i++) {
      const runLocal = async () => {
        local.push(await ctx.backfill(join(ctx.work, `s3-local-${i}`), [], {}));
        await rm(join(ctx.work, `s3-local-${i}`), { recursive: true, force: true });
      };
      const runBucket = async () => {
        bucket.push(await ctx.backfill(join(ctx.work, `s3-bucket-${i}`), ['--parquet-url', `s3://bench/run-${i}`], env));
        await rm(join(ctx.work, `s3-bucket-${i}`), { recursive: true, force: true });
      };
      if (i % 2 === 0) await runLocal().then(runBucket);
      else await runBucket().then(runLocal);
      ctx.log(`  object storage pair ${i + 1}: local ${ctx.secs(local[i]!.wallMs)} (${ctx.secs(local[i]!.cpuMs)} CPU), bucket ${ctx.secs(bucket[i]!.wallMs)} (${ctx.secs(bucket[i]!.cpuMs)} CPU)`);
    }
    const sum = (runs: Run[]) => runs.reduce((n, r) => n + r.wallMs, 0);
    const ratio = sum(local) / sum(bucket);
    const each = (runs: Run[]) => runs.map((r) => ctx.secs(r.wallMs)).join(' / ');
    ctx.row({ section, measure: `backfill of ${ctx.fmt(local[0]!.summary.sessions.written)} sessions into a local directory (format both; 2 runs)`, value: `${each(local)}, peak RSS ${ctx.mb(Math.max(...local.map((r) => r.maxRssBytes)))}` });
    ctx.row({ section, measure: 'the same with the day files uploaded to a bucket on loopback (s3rver; 2 runs, alternating)', value: `${each(bucket)}, peak RSS ${ctx.mb(Math.max(...bucket.map((r) => r.maxRssBytes)))}` });
    ctx.row({ section, measure: 'throughput into the bucket vs into the local directory (sums of the runs)', value: ctx.fmt(ratio, 2), goal: '≥ 0.80', met: ratio >= 0.8 });
    const pq = await ctx.backfill(join(ctx.work, 's3-parquet'), ['--format', 'parquet', '--parquet-url', 's3://bench/parquet'], env);
    await rm(join(ctx.work, 's3-parquet'), { recursive: true, force: true });
    ctx.row({ section, measure: 'format parquet into the bucket (the state kept there too)', value: `${ctx.secs(pq.wallMs)}, peak RSS ${ctx.mb(pq.maxRssBytes)}` });
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}
