/**
 * A real S3-compatible server on loopback for the object-storage tests: s3rver (the S3 REST API over
 * a directory, from npm) behind a small HTTP proxy of ours that adds what a test must control and
 * s3rver lacks: conditional writes as AWS S3 does them (`If-None-Match: *` and `If-Match` on PUT:
 * 412 PreconditionFailed), throttling answers (503 SlowDown, as S3 sends them), and stopping the
 * store mid-run (connections refused) and starting it again on the same port with the same objects.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { afterAll, beforeAll } from 'vitest';

export interface S3TestServer {
  /** The endpoint (AWS_ENDPOINT_URL_S3). */
  url: string;
  /** Environment for session-etl and the SDK: endpoint, region, path style, credentials. */
  env: Record<string, string>;
  /** Answer 503 SlowDown to the next `n` requests (each retried by the SDK). */
  slowDown(n: number): void;
  /** Requests seen, by method and path (for assertions on what was written). */
  requests: Array<{ method: string; path: string; status: number }>;
  /** Refuse connections (the store went away); `start()` brings it back with the same objects. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stop after this many more successful PUTs of day files (a store going away mid-run). */
  stopAfterPuts(n: number): void;
  /** Answer 403 AccessDenied (not retried) to the PUTs `match` selects by path and body (one writer's lock refreshes, say) until called again. */
  refusePuts(match: ((path: string, body: string) => boolean) | undefined): void;
  /** Answer the PUTs of day files with 400 InvalidArgument quoting the request's session token (a store that echoes it), until called with false. */
  echoSessionToken(on: boolean): void;
  close(): Promise<void>;
}

export const S3_ACCESS_KEY = 'S3RVER';
export const S3_SECRET_KEY = 'S3RVER';

export async function startS3(o: { buckets?: string[]; conditionalWrites?: boolean } = {}): Promise<S3TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'session-etl-s3-'));
  const backend = new S3rver({ port: 0, address: '127.0.0.1', directory: dir, silent: true, configureBuckets: (o.buckets ?? ['lake']).map((name) => ({ name })) });
  const { port: backendPort } = (await backend.run()) as AddressInfo;
  const conditional = o.conditionalWrites ?? true;
  const requests: S3TestServer['requests'] = [];
  let slow = 0;
  let putsLeft = Infinity;
  let refuse: ((path: string, body: string) => boolean) | undefined;
  let echo = false;
  let server: Server | undefined;
  let port = 0;
  const locks = new Map<string, Promise<void>>();

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer) =>
    new Promise<void>((resolve) => {
      const up = request(
        { host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers: { ...req.headers, host: `127.0.0.1:${backendPort}` } },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
          r.on('end', () => {
            requests.push({ method: req.method!, path: req.url!, status: r.statusCode ?? 0 });
            resolve();
          });
        },
      );
      up.on('error', () => {
        res.writeHead(502).end();
        resolve();
      });
      up.end(body);
    });

  const head = (path: string) =>
    new Promise<string | null>((resolve) => {
      const r = request({ host: '127.0.0.1', port: backendPort, method: 'HEAD', path: path.split('?')[0], headers: { host: `127.0.0.1:${backendPort}` } }, (res) => {
        res.resume();
        resolve(res.statusCode === 200 ? String(res.headers.etag ?? '') : null);
      });
      r.on('error', () => resolve(null));
      r.end();
    });

  const s3Error = (res: ServerResponse, status: number, code: string, message: string) => {
    res.writeHead(status, { 'content-type': 'application/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (slow > 0) {
      slow--;
      requests.push({ method: req.method!, path: req.url!, status: 503 });
      return s3Error(res, 503, 'SlowDown', 'Please reduce your request rate.');
    }
    if (refuse && req.method === 'PUT' && refuse(req.url!, body.toString('latin1'))) {
      requests.push({ method: req.method, path: req.url!, status: 403 });
      return s3Error(res, 403, 'AccessDenied', 'Access Denied');
    }
    if (echo && req.method === 'PUT' && /\/date(=|%3D)/i.test(req.url!)) {
      requests.push({ method: req.method, path: req.url!, status: 400 });
      return s3Error(res, 400, 'InvalidArgument', `Bad token ${String(req.headers['x-amz-security-token'] ?? '')} for this request`);
    }
    const ifNone = req.headers['if-none-match'];
    const ifMatch = req.headers['if-match'];
    if (conditional && req.method === 'PUT' && (ifNone !== undefined || ifMatch !== undefined)) {
      // One conditional write per key at a time, as S3 decides them.
      const key = req.url!.split('?')[0]!;
      while (locks.has(key)) await locks.get(key);
      let release!: () => void;
      locks.set(key, new Promise<void>((r) => (release = r)));
      try {
        const etag = await head(key);
        if ((ifNone === '*' && etag !== null) || (ifMatch !== undefined && etag !== ifMatch)) {
          requests.push({ method: req.method, path: req.url!, status: 412 });
          return s3Error(res, 412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
        }
        await forward(req, res, body);
      } finally {
        locks.delete(key);
        release();
      }
      return;
    }
    await forward(req, res, body);
    if (req.method === 'PUT' && /\/date(=|%3D)/i.test(req.url!) && res.statusCode === 200 && --putsLeft <= 0) {
      putsLeft = Infinity;
      void api.stop();
    }
  };

  const api: S3TestServer = {
    url: '',
    env: {},
    requests,
    slowDown(n) {
      slow += n;
    },
    stopAfterPuts(n) {
      putsLeft = n;
    },
    echoSessionToken(on) {
      echo = on;
    },
    refusePuts(match) {
      refuse = match;
    },
    async start() {
      server = createServer((req, res) => void handle(req, res));
      await new Promise<void>((r) => server!.listen(port, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
      api.url = `http://127.0.0.1:${port}`;
      api.env = {
        AWS_ENDPOINT_URL_S3: api.url,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: S3_ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY: S3_SECRET_KEY,
        SESSION_ETL_S3_PATH_STYLE: 'true',
      };
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    },
    async close() {
      await api.stop();
      await backend.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  await api.start();
  return api;
}

/** The file's S3 server (from `useS3`): the server's own API, and an SDK client for it. */
export interface S3Fixture extends S3TestServer {
  /** A new SDK client of the server (path style, its credentials); `destroy()` it when done. */
  client(): S3Client;
}

/**
 * One S3 server for a test file: started in beforeAll (with the AWS SDK's Node-version warning
 * silenced, as every bucket test wants), closed in afterAll. Call it at the file's top level or in a
 * describe; use what it returns inside tests.
 */
export function useS3(o: { buckets?: string[]; conditionalWrites?: boolean } = {}): S3Fixture {
  let server: S3TestServer | undefined;
  beforeAll(async () => {
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
    server = await startS3(o);
  });
  afterAll(async () => {
    await server?.close();
  });
  const s = (): S3TestServer => {
    if (!server) throw new Error('the S3 server is started in beforeAll: use it inside a test');
    return server;
  };
  return {
    get url() {
      return s().url;
    },
    get env() {
      return s().env;
    },
    get requests() {
      return s().requests;
    },
    slowDown: (n) => s().slowDown(n),
    stop: () => s().stop(),
    start: () => s().start(),
    stopAfterPuts: (n) => s().stopAfterPuts(n),
    refusePuts: (match) => s().refusePuts(match),
    echoSessionToken: (on) => s().echoSessionToken(on),
    close: () => s().close(),
    client: () =>
      new S3Client({ endpoint: s().url, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY } }),
  };
}
