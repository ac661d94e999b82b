import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on `host:port` (0: a free port); resolves with the server's `http://host:port/` once it listens. */
export function listen(server: Server, port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const a = server.address() as AddressInfo;
      resolve(`http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}/`);
    });
  });
}
