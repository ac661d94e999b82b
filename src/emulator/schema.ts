/**
 * The reporting endpoint's GraphQL schema, written from the interface document ("Session (reporting
 * record)", "Reporting query"). How `sessions(start, end)` declares its arguments is configurable,
 * because the document only says "integer" and clients inline literals.
 */
import { GraphQLError, buildSchema, type GraphQLSchema } from 'graphql';

export type ArgTypes = 'Int!' | 'Int' | 'String!';

const sdl = (argType: ArgTypes): string => `
"""Reporting interface 1.1.0: one operation per request."""
type Query {
  """Session records between two instants (seconds since the UNIX epoch)."""
  sessions(start: ${argType}, end: ${argType}): [Session!]!
  """One session record by id (UUID), or null."""
  session(id: String!): Session
}

type Session {
  "Session identifier (UUID)."
  id: String!
  "Owning company identifier."
  companyId: String
  "Session PIN."
  pin: String
  "Seconds since the UNIX epoch."
  started: Int
  "Seconds since the UNIX epoch; null while the session runs."
  ended: Int
  "ended minus started, in seconds; null while the session runs."
  duration: Int
  "Session kind label."
  sessionType: String
  "Whether the session was recorded."
  recording: Boolean
  "Recording address, when recorded."
  recordingUrl: String
  agent: Agent
  "Agent group identifier."
  agentGroupId: Int
  "Agent network address."
  agentIp: String
  "Customer network address."
  customerIp: String
  externalFields: ExternalFields
}

type Agent {
  id: String
  name: String
  email: String
}

type ExternalFields {
  customerName: String
  externalCaseId: String
  notes: String
  accountingInfo: String
  customerDeviceType: String
  customerOs: String
}
`;

const schemas = new Map<ArgTypes, GraphQLSchema>();

export function reportingSchema(argTypes: ArgTypes): GraphQLSchema {
  const schema = schemas.get(argTypes) ?? buildSchema(sdl(argTypes));
  schemas.set(argTypes, schema);
  return schema;
}

/**
 * Turns a coerced `start`/`end` argument into epoch seconds. With `Int` arguments graphql-js has
 * already checked the value; with `String!` the string must hold a decimal integer; a missing value
 * (nullable `Int`) is an error of the field, as a resolver would report it.
 */
export function epochSecondsArg(value: unknown, name: 'start' | 'end'): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && /^\s*-?\d{1,12}\s*$/.test(value)) return Number(value);
  if (value === null || value === undefined) {
    throw new GraphQLError(`Argument "${name}" is required: seconds since the UNIX epoch.`);
  }
  throw new GraphQLError(`Argument "${name}" must be an integer number of seconds since the UNIX epoch; got ${JSON.stringify(value)}.`);
}
