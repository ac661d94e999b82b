/** Where a store's Parquet dataset goes: the data directory's `parquet/sessions/`, or a bucket's prefix (docs/object-storage.md). */
import { DataDirError } from '../errors.js';

export type DatasetLocation =
  | { kind: 'local'; root: string }
  | {
      kind: 's3';
      bucket: string;
      /** The key prefix of the dataset, without a trailing slash ('' for the bucket's root). */
      prefix: string;
      /** For messages. */
      url: string;
      /** Path-style addressing (MinIO-style and test servers): SESSION_ETL_S3_PATH_STYLE / s3PathStyle. */
      pathStyle: boolean;
    };
export type S3Location = Extract<DatasetLocation, { kind: 's3' }>;

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Parses `--parquet-url` (`s3://BUCKET[/PREFIX]`); anything else, credentials included, is refused (exit 2). */
export function parseParquetUrl(url: string, pathStyle = false): DatasetLocation {
  const m = /^s3:\/\/([^/?#]+)(?:\/([^?#]*))?$/.exec(url.trim());
  if (!m) {
    throw new DataDirError(
      `--parquet-url ${JSON.stringify(url)} is not an S3 URL: give s3://BUCKET/PREFIX (credentials come from the AWS SDK's chain: ` +
        'the environment, a shared profile, web identity or an instance role; the endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL)',
    );
  }
  const bucket = m[1]!;
  if (bucket.includes('@') || bucket.includes(':')) {
    throw new DataDirError('--parquet-url must not hold credentials or a port: give s3://BUCKET/PREFIX and set the endpoint with AWS_ENDPOINT_URL_S3');
  }
  if (!BUCKET.test(bucket)) throw new DataDirError(`--parquet-url: ${JSON.stringify(bucket)} is not a bucket name (3 to 63 characters of a-z, 0-9, '.' and '-')`);
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (prefix.split('/').some((p) => p === '.' || p === '..')) throw new DataDirError(`--parquet-url: the prefix ${JSON.stringify(prefix)} holds '.' or '..'`);
  return { kind: 's3', bucket, prefix, url: `s3://${bucket}${prefix ? `/${prefix}` : ''}`, pathStyle };
}

export function keyOf(l: S3Location, rel: string): string {
  return l.prefix ? `${l.prefix}/${rel}` : rel;
}
