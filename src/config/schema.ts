/**
 * The one configuration schema. Every field is described; the configuration reference of docs/configuration.md
 * and `session-etl config` are generated from these descriptions.
 */
import cron from 'node-cron';
import { z } from 'zod';
import { parseDuration, parseInstant } from '../time/windows.js';
import { looksLikeKey, pathProblem } from './looks-like-key.js';
import { readSize } from './memory-budget.js';

const DURATION_FORMS = 'a duration such as "90s", "15m", "6h", "1d" or "7d" (a number with its unit, as text)';

function succeeds(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch {
    return false;
  }
}

// The key is named by whoever reports the issue ("settle (from file …): …"), so not here.
const duration = z
  .string({ error: (iss) => `expected ${DURATION_FORMS}, got ${iss.input === null ? 'null' : `the ${typeof iss.input} ${JSON.stringify(iss.input)}`}` })
  .refine((s) => succeeds(() => parseDuration(s)), { message: `expected ${DURATION_FORMS}` });

const instant = z
  .union([z.string(), z.number().int().nonnegative()])
  .refine((v) => succeeds(() => parseInstant(String(v))), {
    message: 'expected a date (2026-01-01), an ISO datetime with offset (2026-01-01T08:00:00Z) or epoch seconds',
  });

const USERINFO_MESSAGE = 'a URL holding a user name or password cannot be used (requests refuse it, and it would be a secret in the configuration): remove the user:password@ part';

function noUserinfo(url: string): boolean {
  try {
    const u = new URL(url);
    return u.username === '' && u.password === '';
  } catch {
    return true;
  }
}

const httpUrl = (error?: string) => z.url({ protocol: /^https?$/, ...(error ? { error } : {}) }).refine(noUserinfo, { message: USERINFO_MESSAGE });
const REPORTING_URL_ERROR = 'expected an http:// or https:// URL such as https://reporting.example.com/graphql (scheme and host included)';

/**
 * A file holding a key. Never a key itself: such a value is refused without being shown (it would be
 * printed wherever the setting is, ./looks-like-key.ts).
 */
const keyFilePath = z
  .string()
  .min(1)
  .superRefine((v, ctx) => {
    // The file's own name only: directories may have random names (macOS's temporary directories).
    const problem = pathProblem(v) ?? (looksLikeKey(v.split(/[\\/]/).pop()!) ? 'it looks like a key, not a file path' : null);
    if (problem) ctx.addIssue({ code: 'custom', message: `${problem}: give the path of a file holding the key (the value is not shown)` });
  });

/** The name of an environment variable holding a key; never the key itself (refused without being shown). */
const keyVariableName = z
  .string()
  .superRefine((v, ctx) => {
    const problem = !/^[A-Za-z_][A-Za-z0-9_]*$/.test(v)
      ? 'it cannot be the name of an environment variable (letters, digits and _, not starting with a digit)'
      : v.length > 128
        ? 'it is longer than 128 characters, longer than a variable name'
        : looksLikeKey(v)
          ? 'it looks like a key, not the name of an environment variable'
          : null;
    if (problem) ctx.addIssue({ code: 'custom', message: `${problem}: give the name of the variable holding the key, such as ACME_REPORTING_KEY (the value is not shown)` });
  });

/** An account's name: a path segment and a Hive partition value everywhere (docs/accounts.md). */
export const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const ACCOUNT_NAME_MESSAGE = 'an account name is 1 to 63 characters of a-z, 0-9, _ and -, starting with a letter or digit';

/**
 * One account of the `accounts` map: where its key comes from (never the key itself), and the run
 * settings it overrides. A command-line flag still wins over an account's override.
 */
export const AccountSchema = z
  .object({
    apiKeyFile: keyFilePath.optional().describe('File holding this account\'s API key (a mounted Secret, say).'),
    apiKeyEnv: keyVariableName.optional().describe('Name of the environment variable holding this account\'s API key.'),
    reportingUrl: httpUrl(REPORTING_URL_ERROR).optional(),
    startDate: instant.optional(),
    maxRequestsPerSecond: z.number().positive().optional(),
    concurrency: z.number().int().min(1).max(64).optional(),
    chunk: duration.optional(),
    maxResultsPerQuery: z.number().int().min(1).optional(),
    minChunk: duration.optional(),
    settle: duration.optional(),
    lookback: duration.optional(),
    onInvalid: z.enum(['fail', 'quarantine']).optional(),
    requestTimeout: duration.optional(),
    maxAttempts: z.number().int().min(1).max(50).optional(),
    maxBodyBytes: z.number().int().min(1024).max(2 ** 31).optional(),
  })
  .strict()
  .refine((a) => (a.apiKeyFile === undefined) !== (a.apiKeyEnv === undefined), {
    message: 'give exactly one of apiKeyFile (a file holding the key) or apiKeyEnv (the name of an environment variable holding it)',
  });

export type AccountConfig = z.infer<typeof AccountSchema>;

export const ConfigSchema = z
  .object({
    reportingUrl: httpUrl(REPORTING_URL_ERROR).nullable().describe('Reporting endpoint URL (env REPORTING_URL).'),
    apiKey: z.string().min(1).nullable().optional().describe('Reporting API key (env REPORTING_API_KEY). Secret: never put it in a committed file; use the environment or apiKeyFile.'),
    apiKeyFile: keyFilePath.nullable().optional().describe('File holding the reporting API key (mode 0600 recommended).'),
    dataDir: z.string().min(1).describe('Output directory (env SESSION_ETL_DATA_DIR): sessions.duckdb and parquet/sessions/.'),
    parquetUrl: z
      .string()
      .regex(/^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/[^?#]*)?$/, { message: 'expected s3://BUCKET or s3://BUCKET/PREFIX (credentials come from the AWS SDK\'s chain, never the URL)' })
      .nullable()
      .describe('Where the Parquet dataset goes instead of the data directory: s3://BUCKET/PREFIX of an S3-compatible store (env SESSION_ETL_PARQUET_URL; docs/object-storage.md). Endpoint, region and credentials follow the AWS SDK (AWS_ENDPOINT_URL_S3, AWS_REGION, the default credential chain).'),
    s3PathStyle: z
      .preprocess((v) => (v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : v), z.boolean({ error: 'expected true or false' }))
      .describe('Path-style bucket addressing (env SESSION_ETL_S3_PATH_STYLE=true), which MinIO-style stores and test servers need.'),
    format: z.enum(['duckdb', 'parquet', 'both']).describe('What to write: the DuckDB table, the Parquet dataset, or both. Unset, a data directory keeps the format of its first run; a different one is refused (exit 2).'),
    chunk: duration.describe('Length of the UTC-aligned windows a range is cut into (15m, 6h, 1d, 7d, ...). A run plans at most 1,000,000 windows (each is held in memory while it runs): a larger plan is refused with exit 2, naming its size and the smallest `--chunk` that fits.'),
    concurrency: z.number().int().min(1).max(64).describe('Maximum requests in flight (lowered automatically on 429, raised again slowly).'),
    maxResultsPerQuery: z.number().int().min(1).nullable().describe('A window returning at least this many records is split in two (the server may cap answers silently). Null: only split on errors.'),
    minChunk: duration.describe('Smallest window bisection may produce; a window that still fails there fails the run.'),
    settle: duration.describe('Never fetch closer to now than this: the checkpoint stays at least this far behind.'),
    lookback: duration.describe('How far before the checkpoint each export re-reads (sessions still running or changed).'),
    onInvalid: z.enum(['fail', 'quarantine']).describe('An invalid record fails its window (fail), or is kept in rejected_sessions while the rest loads (quarantine).'),
    maxRequestsPerSecond: z.number().positive().nullable().describe('Upper bound on requests per second, on top of the rate learned from 429 answers. Null: none. At least 0.01 (one request every 100 s): a lower rate would look like a hang, and is refused with exit 2.'),
    requestTimeout: duration.describe('Per-request timeout, body included.'),
    maxAttempts: z.number().int().min(1).max(50).describe('Attempts per request for transient errors (5xx, resets, timeouts, incomplete bodies).'),
    maxBodyBytes: z
      .number()
      .int()
      .min(1024)
      .max(2 ** 31)
      .describe('Largest answer body read, in bytes (default 268435456, 256 MiB, and at most the memory budget\'s share per answer: 8 MiB at the default budget); a window whose answer is larger is split in two, and fails below minChunk.'),
    memoryLimit: z
      .union([z.string(), z.number()], { error: 'expected a size such as "384MiB", "512MB" or "1GiB" (or a number of bytes)' })
      .superRefine((v, ctx) => {
        // The one size parser (config/memory-budget.ts): a unit required, at most 1 TiB.
        const r = readSize(v);
        if ('problem' in r) ctx.addIssue({ code: 'custom', message: r.problem });
      })
      .nullable()
      .describe(
        "The run's memory budget (env SESSION_ETL_MEMORY_LIMIT), such as \"384MiB\": the smaller of it and the container's memory cgroup limit is used; neither: 300 MB. DuckDB's pool, the answers in flight and the windows waiting for their commit are sized from it; below 272 MiB, or in a container below 384 MiB, a run refuses to start (exit 2). `config` shows the budget and its split.",
      ),
    startDate: instant.nullable().describe('Where the first export starts when nothing is stored yet (like --since).'),
    scheduleCron: z
      .string()
      .refine((s) => cron.validate(s), { message: 'expected a cron expression such as "0 2 * * *" (minute hour day month weekday, optional seconds first)' })
      .describe('When `session-etl schedule` runs the nightly export (node-cron syntax).'),
    scheduleTimezone: z
      .string()
      .refine((tz) => succeeds(() => new Intl.DateTimeFormat('en', { timeZone: tz })), { message: 'expected an IANA time zone such as UTC or Europe/Berlin' })
      .describe('Time zone of scheduleCron.'),
    authUrl: httpUrl().nullable().optional().describe('Token service host for `auth` commands (env AUTH_URL).'),
    apiUrl: httpUrl().nullable().optional().describe('Identity lookup host for `whoami` (env API_URL).'),
    consoleUrl: httpUrl().nullable().optional().describe('Console host for `session start/end` (env CONSOLE_URL).'),
    oauthClientId: z.string().min(1).nullable().optional().describe('OAuth client id (env OAUTH_CLIENT_ID). The client secret is env-only: OAUTH_CLIENT_SECRET.'),
    tokenFile: z.string().min(1).nullable().optional().describe('Token store, mode 0600 (env SESSION_ETL_TOKEN_FILE; default ~/.config/session-etl/tokens.json).'),
    notifyUrl: z
      .url({ protocol: /^https?$/ })
      .nullable()
      .describe('Webhook that receives a JSON POST when a run fails, recovers, or the lag first exceeds maxLag (env SESSION_ETL_NOTIFY_URL; Slack and Teams incoming webhooks work as they are). Secret: its path usually is the token.'),
    maxLag: duration.describe('How far the checkpoint may fall behind now before it is an alert (notifications; `status --check`).'),
    logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).describe('Log level.'),
    volumeAnomalyThreshold: z
      .number()
      .min(0)
      .max(1)
      .describe('Volume anomalies: a finished day holding fewer sessions than this fraction of its expected count (the median of the same weekday over the previous volumeAnomalyWeeks weeks) is reported by `status`, `status --check`, /healthz, the metrics, a notification and the dashboard. 0 turns the check off.'),
    volumeAnomalyWeeks: z
      .number()
      .int()
      .min(1)
      .max(52)
      .describe('Volume anomalies: how many previous same weekdays make a day\'s expected count (their median); a day is judged only when all of them are covered whole.'),
    volumeAnomalyMinSessions: z
      .number()
      .int()
      .min(0)
      .describe('Volume anomalies: a day whose expected count is below this is not judged (too little volume to tell a dip from noise).'),
    verifyCron: z
      .string()
      .refine((s) => cron.validate(s), { message: 'expected a cron expression such as "0 4 * * 0" (minute hour day month weekday, optional seconds first)' })
      .nullable()
      .describe('When `session-etl schedule` runs the sampled verify (jobs/weekly-verify.ts), in scheduleTimezone; null (the default): never. "0 4 * * 0" is Sundays at 04:00.'),
    verifyRange: duration.describe('The scheduled verify checks days of this range before the checkpoint.'),
    verifySample: z.number().int().min(1).max(366).describe('The scheduled verify checks this many random days of its range (`verify --sample`).'),
    verifyRepair: z.boolean().describe('The scheduled verify repairs what it finds missing or changed (`verify --repair`); sessions gone from the source are only reported.'),
    accounts: z
      .record(z.string().regex(ACCOUNT_NAME, { message: ACCOUNT_NAME_MESSAGE }), AccountSchema)
      .nullable()
      .optional()
      .describe('Many accounts in one data directory: a map of account name to its key (apiKeyFile or apiKeyEnv) and overrides of reportingUrl, startDate, maxRequestsPerSecond, concurrency, chunk, ... (docs/accounts.md).'),
  })
  .strict();

export type Config = z.infer<typeof ConfigSchema>;
