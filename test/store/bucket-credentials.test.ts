/**
 * Credentials the AWS SDK resolves itself (a shared profile here; IRSA's web identity and the
 * container chain go the same way) are hidden wherever session-etl speaks (issue 38, LOW): a store
 * whose error echoes the session token never gets it printed nor sent to the webhook.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEmulator } from '../helpers/emulator-fixture.js';
import { runCli } from '../helpers/cli.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, useS3 } from '../helpers/s3-server.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { D, isoDay } from '../helpers/time.js';

const NOW = Math.floor(Date.now() / 1000);
const FROM = Math.floor(NOW / D) * D - 4 * D;
const SESSION_TOKEN = 'IQoJb3JpZ2luX2VjEProfileSessionToken0042xyz';

const fx = useEmulator({ seed: 7, from: FROM - D, to: NOW, now: NOW, sessionsPerDay: 20 }, { prefix: 'session-etl-creds-' });
const s3 = useS3();

describe('credentials of a profile', () => {
  it('a store error echoing the session token of a profile: redacted on stderr and in the webhook payload', async () => {
    const root = await fx.tempDir();
    const credentials = join(root, 'aws-credentials');
    await writeFile(credentials, `[etl]\naws_access_key_id = ${S3_ACCESS_KEY}\naws_secret_access_key = ${S3_SECRET_KEY}\naws_session_token = ${SESSION_TOKEN}\n`, { mode: 0o600 });
    const hook = await startWebhookReceiver('hook/t0ken');
    s3.echoSessionToken(true);
    try {
      const r = await runCli(['backfill', '--from', isoDay(FROM), '--to', isoDay(FROM + 2 * D), '--format', 'parquet', '--parquet-url', 's3://lake/creds', '--log-level', 'error'], {
        ...fx.env(join(root, 'data')),
        AWS_ENDPOINT_URL_S3: s3.url,
        AWS_REGION: 'us-east-1',
        SESSION_ETL_S3_PATH_STYLE: 'true',
        AWS_SHARED_CREDENTIALS_FILE: credentials,
        AWS_CONFIG_FILE: join(root, 'no-aws-config'),
        AWS_PROFILE: 'etl',
        SESSION_ETL_NOTIFY_URL: hook.url,
      });
      expect(r.code, r.stderr).toBe(1);
      // The store's words are there, the token is not.
      expect(r.stderr).toMatch(/InvalidArgument \(HTTP 400\): Bad token \[REDACTED\] for this request/);
      expect(r.stdout + r.stderr).not.toContain(SESSION_TOKEN);
      expect(hook.posts.length).toBeGreaterThan(0);
      for (const p of hook.posts) expect(p.body).not.toContain(SESSION_TOKEN);
      expect(hook.posts.map((p) => p.body).join('\n')).toContain('[REDACTED]');
    } finally {
      s3.echoSessionToken(false);
      await hook.close();
    }
  });
});
