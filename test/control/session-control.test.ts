import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlHttpError } from '../../src/control/errors/control-http-error.js';
import { InvalidControlRequestError } from '../../src/control/errors/invalid-control-request-error.js';
import { SESSION_V1_WARNING, SessionControlClient } from '../../src/control/session-control-client.js';
import { allText } from '../helpers/capture.js';
import { signIn, startTestEmulator, type TestEmulator } from '../auth/helpers.js';

let t: TestEmulator;
let token: string;
const warnings: string[] = [];

function control(opts: Partial<ConstructorParameters<typeof SessionControlClient>[0]> = {}) {
  return new SessionControlClient({ baseUrl: t.base, accessToken: token, warn: (m) => warnings.push(m), ...opts });
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: Error) => e,
  );
}

beforeEach(async () => {
  warnings.length = 0;
  t = await startTestEmulator();
  token = (await signIn(t)).access_token;
});
afterEach(async () => t.close());

describe('start a remote-view session', () => {
  it('answers 201 with the agent and customer URLs; the id comes from the Location header', async () => {
    const s = await control().startRemoteViewSession({ customerName: 'Ciara Customer', agentEmail: 'agent@example.com', sourceApp: 'tests' });
    expect(s.agentUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/console\/session\//);
    expect(s.clientUrl).toMatch(/\/join\/\d{6}$/);
    expect(s.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const stored = t.state().sessions.get(s.sessionId!);
    expect(stored?.request).toEqual({ customerName: 'Ciara Customer', agentEmail: 'agent@example.com', sourceApp: 'tests' });
  });

  it('accepts webhooks; their tokens are secrets', async () => {
    const hookToken = 'webhook-token-7f3a91';
    await control().startRemoteViewSession({ webhooks: [{ targetUrl: 'https://hooks.example.com/x', authorizationToken: hookToken, type: 0 }] });
    const err = await rejection(
      control().startRemoteViewSession({ webhooks: [{ targetUrl: 'not a url', authorizationToken: hookToken, type: 1.5 }] }),
    );
    expect(err).toBeInstanceOf(InvalidControlRequestError);
    expect(err.message).toMatch(/targetUrl.*type/s);
    expect(allText(err)).not.toContain(hookToken);
  });

  it('refuses a bad e-mail before sending anything', async () => {
    await expect(control().startRemoteViewSession({ agentEmail: 'nobody' })).rejects.toBeInstanceOf(InvalidControlRequestError);
    expect(t.state().counters.sessionStarts).toBe(0);
  });

  it('without a valid token: a ControlHttpError with the status and body that came back, token redacted', async () => {
    const err = (await rejection(control({ accessToken: 'emu-at-not-issued-123' }).startRemoteViewSession())) as ControlHttpError;
    expect(err).toBeInstanceOf(ControlHttpError);
    expect(err).toMatchObject({ status: 401, retryable: false, body: { error: 'invalid_token' } });
    expect(err.message).toMatch(/HTTP 401.*remoteview;settings/);
    expect(allText(err)).not.toContain(token);
  });

  it('a token without the scope remoteview;settings is refused (403)', async () => {
    const narrow = (await signIn(t, { scope: 'identity' })).access_token;
    await expect(control({ accessToken: narrow }).startRemoteViewSession()).rejects.toMatchObject({ status: 403 });
  });

  it('an expired access token is refused (401)', async () => {
    t.advance(3601);
    await expect(control().startRemoteViewSession()).rejects.toMatchObject({ status: 401 });
  });
});

describe('create session (v1, deprecated)', () => {
  it('answers 201 with the same fields, and warns', async () => {
    const s = await control().createSessionV1({ customerName: 'C', sourceApp: 'tests', agentEmail: null, sessionType: 4 });
    expect(s).toEqual({ customerName: 'C', sourceApp: 'tests', agentEmail: null, sessionType: 4, webhooks: null });
    expect(warnings).toEqual([SESSION_V1_WARNING]);
  });

  it.each([-1, 5, 2.5])('sessionType %s is refused before sending', async (sessionType) => {
    await expect(control().createSessionV1({ sessionType })).rejects.toBeInstanceOf(InvalidControlRequestError);
  });
});

describe('end session', () => {
  it('sends DELETE by default, with sessionId, endSource and showWrapup', async () => {
    const { sessionId } = await control().startRemoteViewSession();
    const r = await control().endSession({ sessionId: sessionId!, endSource: 'tests', showWrapup: true });
    expect(r).toEqual({ status: 204, body: undefined, method: 'DELETE' });
    expect(t.state().sessions.get(sessionId!)).toMatchObject({ endSource: 'tests', showWrapup: true, endMethod: 'DELETE' });
  });

  it('the method is an option; a method the console refuses surfaces as 405', async () => {
    await t.close();
    t = await startTestEmulator({ endSessionMethods: ['PUT'] });
    token = (await signIn(t)).access_token;
    const { sessionId } = await control().startRemoteViewSession();
    await expect(control().endSession({ sessionId: sessionId! })).rejects.toMatchObject({ status: 405, body: { message: 'use PUT' } });
    await expect(control({ endSessionMethod: 'PUT' }).endSession({ sessionId: sessionId! })).resolves.toMatchObject({ status: 204, method: 'PUT' });
  });

  it('an unknown or already-ended session: whatever the console answers', async () => {
    const { sessionId } = await control().startRemoteViewSession();
    await control().endSession({ sessionId: sessionId! });
    await expect(control().endSession({ sessionId: sessionId! })).rejects.toMatchObject({ status: 409 });
    await expect(control().endSession({ sessionId: '00000000-0000-4000-8000-000000000000' })).rejects.toMatchObject({ status: 404 });
  });

  it('a session id that is not a UUID is refused before sending', async () => {
    await expect(control().endSession({ sessionId: 'abc' })).rejects.toBeInstanceOf(InvalidControlRequestError);
  });
});

describe('the reporting endpoint', () => {
  it('keeps refusing OAuth tokens', async () => {
    const res = await fetch(t.emu.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ sessions(start: 0, end: 1) { id } }' }),
    });
    expect(res.status).toBe(401);
    expect(await res.text()).toMatch(/OAuth access tokens are not accepted/);
  });
});
