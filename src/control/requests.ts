import { z } from 'zod';
import { registerSecret } from '../util/redact.js';
import { describeIssues } from '../auth/http.js';
import { InvalidControlRequestError } from './errors/invalid-control-request-error.js';

/** A webhook attached to a session creation request. Its payload and trigger are not published. */
export const SessionWebhookSchema = z.object({
  targetUrl: z.url({ protocol: /^https?$/, error: 'targetUrl must be an http(s) URL' }).nullable().describe('Address to be called'),
  authorizationToken: z.string().nullable().describe('Credential sent to the target: a secret, redacted everywhere'),
  type: z.int32().describe('Webhook type; the set of allowed values is not published'),
});
export type SessionWebhook = z.infer<typeof SessionWebhookSchema>;

const optionalString = z.string().nullable().optional();
const agentEmail = z.email('agentEmail must be an e-mail address').nullable().optional();
const webhooks = z.array(SessionWebhookSchema).nullable().optional();

/** POST {base_url}/api/v2/Session/RemoteView. Every field optional and nullable. */
export const RemoteViewSessionRequestSchema = z.object({
  sourceApp: optionalString,
  customerName: optionalString,
  agentEmail,
  webhooks,
});
export type RemoteViewSessionRequest = z.infer<typeof RemoteViewSessionRequestSchema>;

/** POST {base_url}/api/v1/Session (deprecated). sessionType is 0 to 4; what each value means is not published. */
export const SessionV1RequestSchema = z.object({
  customerName: optionalString,
  sourceApp: optionalString,
  agentEmail,
  sessionType: z.int32().min(0, 'sessionType must be 0 to 4').max(4, 'sessionType must be 0 to 4'),
  webhooks,
});
export type SessionV1Request = z.infer<typeof SessionV1RequestSchema>;

/** {base_url}/api/v2/Session: end a session. */
export const EndSessionRequestSchema = z.object({
  sessionId: z.uuid('sessionId must be a UUID'),
  endSource: z.string().nullable().optional(),
  showWrapup: z.boolean().default(false),
});
export type EndSessionRequest = z.input<typeof EndSessionRequestSchema>;

/** The 201 answer of the remote-view start. */
export const RemoteViewSessionResponseSchema = z.looseObject({
  agentUrl: z.string().nullable(),
  clientUrl: z.string().nullable(),
});

/** The 201 answer of the v1 create: the same fields as the request. */
export const SessionV1ResponseSchema = z.looseObject({
  customerName: optionalString,
  sourceApp: optionalString,
  agentEmail: optionalString,
  sessionType: z.number().int().optional(),
  webhooks: z.array(z.looseObject({})).nullable().optional(),
});

/** Validates a request body; registers every webhook token as a secret first. */
export function validateRequest<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const hooks = (value as { webhooks?: unknown } | null)?.webhooks;
  if (Array.isArray(hooks)) for (const h of hooks) registerSecret((h as { authorizationToken?: string } | null)?.authorizationToken);
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = describeIssues(parsed.error);
    throw new InvalidControlRequestError(`${what}: the request was not sent: ${issues.join('; ')}`, issues);
  }
  return parsed.data;
}
