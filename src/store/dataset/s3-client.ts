/**
 * The S3 client of a bucket dataset, configured the AWS SDK's own way (docs/object-storage.md);
 * throttling, 5xx and resets are retried by the SDK (standard mode, bounded). The SDK is pinned at a
 * release that runs on Node 20: its notice that later ones need Node 22 is turned off (the README says it).
 */
import type { _Object, S3Client } from '@aws-sdk/client-s3';
import { ExitCode } from '../../errors.js';
import { registerSecret } from '../../util/redact.js';
import type { S3Location } from './location.js';

/** Attempts per S3 request (the SDK's standard retry, throttling included). */
export const S3_MAX_ATTEMPTS = 6;

/** A bucket that cannot be used as configured: credentials, bucket, region, endpoint. Exit 2 at start; names the bucket and the cause. */
export class BucketSettingError extends Error {
  override readonly name = 'BucketSettingError';
  readonly exitCode = ExitCode.usage;
}

/** A request to the bucket failed during a run (after the SDK's retries). Exit 1: what was committed stays, the next run continues. */
export class BucketWriteError extends Error {
  override readonly name = 'BucketWriteError';
  readonly exitCode = ExitCode.runFailed;
}

/** This run no longer holds the bucket's lock (bucket-run.ts), so it stopped before its next upload: exit 3. */
export class BucketLockLostError extends Error {
  override readonly name = 'BucketLockLostError';
  readonly exitCode = ExitCode.locked;
}

export const statusOf = (err: unknown): number | undefined => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

/** An object that is not there (NotFound: HEAD's answer). */
export const noSuchKey = (err: unknown): boolean => {
  const name = (err as { name?: string }).name;
  return name === 'NoSuchKey' || name === 'NotFound' || statusOf(err) === 404;
};

/** A conditional write refused: 412 Precondition Failed, or 409 from stores that answer so. */
export const conditionRefused = (err: unknown): boolean => statusOf(err) === 412 || statusOf(err) === 409;

/** Runs `fn` with a client of its own, destroyed after. */
export async function withS3Client<T>(l: S3Location, fn: (client: S3Client) => Promise<T>): Promise<T> {
  const client = await s3ClientFor(l);
  try {
    return await fn(client);
  } finally {
    client.destroy();
  }
}

/** Every object under `Prefix`, page by page. */
export async function* listObjects(client: S3Client, Bucket: string, Prefix: string): AsyncGenerator<_Object> {
  const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix, ...(token ? { ContinuationToken: token } : {}) }));
    yield* page.Contents ?? [];
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
}

export async function s3ClientFor(l: S3Location): Promise<S3Client> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  // The SDK reads them itself; registered so that no message of ours can ever show them.
  registerSecret(process.env.AWS_SECRET_ACCESS_KEY);
  registerSecret(process.env.AWS_SESSION_TOKEN);
  const { S3Client } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    credentials: redactedCredentials(new S3Client({}).config.credentials),
    forcePathStyle: l.pathStyle,
    maxAttempts: S3_MAX_ATTEMPTS,
    retryMode: 'standard',
    // Checksums only where S3 requires them: S3-compatible stores (MinIO, Ceph, R2, test servers)
    // do not all take the streaming checksums the SDK adds by default.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  if (process.env.SESSION_ETL_S3_UNSIGNED_PAYLOAD !== '0') {
    // The body is not hashed into the signature (S3's UNSIGNED-PAYLOAD, what the SDK sends over HTTPS
    // anyway): over a plain-HTTP endpoint the SDK would hash every day file once more.
    client.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { headers?: Record<string, string> };
        if (request.headers) request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
        return next(args);
      },
      { step: 'build', name: 'sessionEtlUnsignedPayload' },
    );
  }
  return client;
}

type CredentialProvider = InstanceType<typeof import('@aws-sdk/client-s3').S3Client>['config']['credentials'];

/**
 * The SDK's default credential chain, each set it resolves registered for redaction as it comes, after
 * every refresh too: a store's error may echo the session token, and only the environment's were known.
 */
function redactedCredentials(chain: CredentialProvider): CredentialProvider {
  return async (o) => {
    const c = await chain(o);
    registerSecret(c.accessKeyId);
    registerSecret(c.secretAccessKey);
    registerSecret(c.sessionToken);
    return c;
  };
}

/** A bucket request's failure in words a user can act on. `atStart`: the check before any fetch (exit 2); else exit 1. */
export function bucketError(err: unknown, l: S3Location, what: string, { atStart = false }: { atStart?: boolean } = {}): Error {
  const e = err as { name?: string; Code?: string; message?: string; $metadata?: { httpStatusCode?: number }; code?: string; cause?: { code?: string } };
  const code = e.Code ?? e.name ?? '';
  const status = e.$metadata?.httpStatusCode;
  const net = e.code ?? e.cause?.code ?? '';
  const where = `bucket ${l.bucket}${l.prefix ? ` (prefix ${l.prefix}/)` : ''}`;
  let text: string;
  let setting = true;
  if (/InvalidAccessKeyId|SignatureDoesNotMatch|InvalidToken|ExpiredToken|TokenRefreshRequired/.test(code)) {
    text = `${where} refused the credentials (${code}): check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, the profile or the role the SDK found`;
  } else if (/AccessDenied|Forbidden/.test(code) || status === 403) {
    text = `${where} denied ${what} (${code || 'HTTP 403'}): the credentials need s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on it`;
  } else if (/NoSuchBucket/.test(code) || (status === 404 && /bucket/.test(what))) {
    text = `${where} does not exist (or these credentials cannot see it): create it, or fix --parquet-url`;
  } else if (/PermanentRedirect|AuthorizationHeaderMalformed|IllegalLocationConstraint|301/.test(code) || status === 301) {
    text = `${where} is in another region than the one configured (${code || 'HTTP 301'}): set AWS_REGION to the bucket's region`;
  } else if (/CredentialsProviderError|Could not load credentials/i.test(`${code} ${e.message ?? ''}`)) {
    text = `no AWS credentials found for ${where}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile (AWS_PROFILE), or a role (web identity, instance)`;
  } else if (/Region is missing/i.test(e.message ?? '')) {
    text = `no region for ${where}: set AWS_REGION (any value for an S3-compatible store that ignores it, e.g. us-east-1)`;
  } else if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|EHOSTUNREACH/.test(`${net} ${code} ${e.message ?? ''}`)) {
    setting = atStart;
    text = `the object store of ${where} cannot be reached (${net || code || e.message}): check AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL and the network`;
  } else {
    setting = atStart && status !== undefined && status >= 400 && status < 500;
    text = `${what} in ${where} failed: ${code || 'error'}${status ? ` (HTTP ${status})` : ''}${e.message && e.message !== code ? `: ${e.message.split('\n')[0]!.slice(0, 300)}` : ''}`;
  }
  if (atStart && setting) return new BucketSettingError(`${text}; nothing was fetched or written`, { cause: err });
  return new BucketWriteError(`${text}; data committed before this point is intact, and the next run continues`, { cause: err });
}
