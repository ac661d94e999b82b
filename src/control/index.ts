export {
  SessionControlClient,
  DEFAULT_END_SESSION_METHOD,
  END_SESSION_METHODS,
  SESSION_V1_WARNING,
  type SessionControlClientOptions,
  type RemoteViewSession,
  type SessionV1,
  type EndSessionMethod,
  type EndSessionResult,
} from './session-control-client.js';
export {
  SessionWebhookSchema,
  RemoteViewSessionRequestSchema,
  SessionV1RequestSchema,
  EndSessionRequestSchema,
  type SessionWebhook,
  type RemoteViewSessionRequest,
  type SessionV1Request,
  type EndSessionRequest,
} from './requests.js';
export * from './errors/index.js';
