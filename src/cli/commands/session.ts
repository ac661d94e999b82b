/**
 * `session-etl session start | end`: start a remote-view session (prints the agent's and the
 * customer's URLs) and end one, on the console host (CONSOLE_URL) with the stored OAuth token.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { createTokenSetup } from '../../auth/from-config.js';
import { InvalidControlRequestError } from '../../control/errors/invalid-control-request-error.js';
import {
  DEFAULT_END_SESSION_METHOD,
  END_SESSION_METHODS,
  SessionControlClient,
  type EndSessionMethod,
} from '../../control/session-control-client.js';
import type { SessionWebhook } from '../../control/requests.js';
import { registerSecret } from '../../util/redact.js';
import { collect } from '../account-options.js';
import { asUsage } from '../usage-error.js';
import { defaultDeps, loadConfig, println, TOKEN_SETTINGS, type InterfaceCommandDeps } from './auth.js';

/** Environment variable holding the token sent to webhook targets (kept off the command line). */
export const WEBHOOK_TOKEN_ENV = 'SESSION_ETL_WEBHOOK_TOKEN';

interface StartOptions {
  customerName?: string;
  agentEmail?: string;
  sourceApp: string;
  webhook?: string[];
  webhookType: number;
  json?: boolean;
}

interface EndOptions {
  showWrapup?: boolean;
  endSource?: string;
  method: EndSessionMethod;
  json?: boolean;
}

export function register(program: Command, deps: InterfaceCommandDeps = defaultDeps()): void {
  const session = program.command('session').description('Start and end remote-view sessions (session control, OAuth scope remoteview;settings).');

  session
    .command('start')
    .description('Start a remote-view session (POST {CONSOLE_URL}/api/v2/Session/RemoteView) and print the agent and customer URLs.')
    .option('--customer-name <name>', 'customer name shown in the session')
    .option('--agent-email <email>', 'e-mail of the agent who takes the session')
    .option('--source-app <name>', 'name of the application starting the session', 'session-etl')
    .option('--webhook <url>', `webhook target (repeatable); its token is read from ${WEBHOOK_TOKEN_ENV}`, collect)
    .option('--webhook-type <n>', 'webhook type (an integer; the allowed values are not published)', parseInteger, 0)
    .option('--json', 'print JSON')
    .action(async (opts: StartOptions) => {
      const client = controlClient(deps);
      const token = deps.env[WEBHOOK_TOKEN_ENV] || null;
      registerSecret(token);
      const webhooks: SessionWebhook[] = (opts.webhook ?? []).map((targetUrl) => ({ targetUrl, authorizationToken: token, type: opts.webhookType }));
      const started = await asUsage(() =>
        client.startRemoteViewSession({
          sourceApp: opts.sourceApp,
          customerName: opts.customerName ?? null,
          agentEmail: opts.agentEmail ?? null,
          webhooks: webhooks.length > 0 ? webhooks : null,
        }),
        refusedBeforeSending,
      );
      if (opts.json) {
        println(deps.stdout, JSON.stringify({ agentUrl: started.agentUrl, clientUrl: started.clientUrl, sessionId: started.sessionId ?? null }, null, 2));
        return;
      }
      println(deps.stdout, 'Remote-view session started.');
      println(deps.stdout, `  agent URL:    ${started.agentUrl ?? '(none given)'}`);
      println(deps.stdout, `  customer URL: ${started.clientUrl ?? '(none given)'}`);
      println(
        deps.stdout,
        started.sessionId
          ? `  session id:   ${started.sessionId}   (end it with: session-etl session end ${started.sessionId})`
          : '  session id:   not given by the console',
      );
    });

  session
    .command('end')
    .description(`End a session ({CONSOLE_URL}/api/v2/Session; the document does not give the method: ${DEFAULT_END_SESSION_METHOD} unless --method says otherwise).`)
    .argument('<id>', 'the session id (a UUID)')
    .option('--show-wrapup', 'show the wrap-up form to the agent', false)
    .option('--end-source <text>', 'what ended the session (free text)')
    .option('--method <method>', `HTTP method to use: ${END_SESSION_METHODS.join(', ')}`, parseMethod, DEFAULT_END_SESSION_METHOD)
    .option('--json', 'print JSON')
    .action(async (id: string, opts: EndOptions) => {
      const client = controlClient(deps);
      const result = await asUsage(() =>
        client.endSession({ sessionId: id, endSource: opts.endSource ?? null, showWrapup: opts.showWrapup === true }, { method: opts.method }),
        refusedBeforeSending,
      );
      if (opts.json) println(deps.stdout, JSON.stringify({ sessionId: id, ended: true, status: result.status, method: result.method, body: result.body ?? null }));
      else println(deps.stdout, `Session ${id} ended (HTTP ${result.status}, ${result.method}).`);
    });
}

function controlClient(deps: InterfaceCommandDeps): SessionControlClient {
  const config = loadConfig(deps, [...TOKEN_SETTINGS, 'consoleUrl']);
  const { manager } = createTokenSetup(config, deps);
  return new SessionControlClient({
    baseUrl: config.consoleUrl!,
    accessToken: () => manager.getAccessToken(),
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
  });
}

/** A request refused before sending (bad e-mail, bad UUID...) is a usage error. */
const refusedBeforeSending = (err: unknown): boolean => err instanceof InvalidControlRequestError;

function parseInteger(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected an integer');
  return n;
}

function parseMethod(v: string): EndSessionMethod {
  const m = v.toUpperCase() as EndSessionMethod;
  if (!END_SESSION_METHODS.includes(m)) throw new InvalidArgumentError(`expected one of ${END_SESSION_METHODS.join(', ')}`);
  return m;
}
