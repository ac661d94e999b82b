/** A webhook receiver on loopback port 0 for the notification tests: records every POST it gets. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ReceivedPost<T = Record<string, unknown>> {
  path: string;
  contentType: string | undefined;
  body: string;
  json: T;
}

export interface WebhookReceiver<T = Record<string, unknown>> {
  /** http://127.0.0.1:PORT/<path> */
  url: string;
  posts: Array<ReceivedPost<T>>;
  close(): Promise<void>;
}

/** Starts a receiver whose URL ends in `path` (a webhook's secret lives there); `answer: false` accepts requests and never answers. */
export async function startWebhookReceiver<T = Record<string, unknown>>(path: string, o: { answer?: boolean } = {}): Promise<WebhookReceiver<T>> {
  const posts: Array<ReceivedPost<T>> = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', contentType: req.headers['content-type'], body, json: JSON.parse(body) as T });
      if (o.answer ?? true) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/${path.replace(/^\//, '')}`,
    posts,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
