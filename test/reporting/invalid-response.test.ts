/**
 * Answers that are not GraphQL responses, on the by-id path (graphql-request): each is an
 * InvalidResponseError (not retried, exit code of its family), decided by the answer's shape and
 * media type rather than by the text of graphql-request's own errors. A real HTTP server on port 0
 * serves each body with status 200.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReportingClient } from '../../src/reporting/client.js';
import { InvalidResponseError } from '../../src/reporting/errors/invalid-response-error.js';

let answer = { type: 'application/json', body: '{}' };
let requests = 0;
let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': answer.type }).end(answer.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const ID = '00000000-0000-4000-8000-000000000000';

describe('an answer that is not a GraphQL response', () => {
  it.each([
    ['errors not a list', 'application/json', '{"errors":{"message":"boom"}}', /errors is not a list/],
    ['data a list', 'application/json', '{"data":[]}', /data is not an object/],
    ['a JSON string', 'application/json', '"hello"', /not an object/],
    ['an HTML page', 'text/html', '<html>maintenance</html>', /content-type "text\/html"/],
  ])('%s: InvalidResponseError, asked once', async (_name, type, body, message) => {
    answer = { type, body };
    requests = 0;
    const c = new ReportingClient({ url, apiKey: 'k-invalid-response', sleep: async () => {} });
    const err = await c.getSession(ID).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidResponseError);
    expect((err as Error).message).toMatch(message);
    expect(requests).toBe(1);
  });
});
