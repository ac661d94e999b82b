/**
 * Answers one reporting request body the way a graphql-js server would: parse and validate (cached by
 * query text), then execute with graphql-js or, for the plain `{ sessions(start, end) { ... } }` the
 * pipeline sends, write the JSON without executing (the "fast path", byte for byte the same; see
 * docs/emulator.md). Data-level faults (maxSpan, maxResults, truncateResults, partial) apply in both.
 */
import {
  GraphQLError, Kind, execute, getArgumentValues, getLocation, getNamedType, getVariableValues,
  isObjectType, parse, validate,
  type DocumentNode, type FieldNode, type GraphQLField, type GraphQLObjectType, type GraphQLSchema,
  type OperationDefinitionNode, type SelectionSetNode, type SourceLocation,
} from 'graphql';
import type { SessionRecord } from '../schema/session-fields.js';
import type { FaultDice, FaultKind } from './faults.js';
import { Lru } from './lru.js';
import type { EmulatorFaults } from './options.js';
import { epochSecondsArg } from './schema.js';
import { AGENT_FIELD_NAMES, EXTERNAL_FIELD_NAMES, SESSION_FIELD_NAMES } from './generate-day.js';
import type { Selection, SessionDataset, WindowRule } from './session-dataset.js';

/** A request body after JSON parsing; the server has checked that `query` is a string. */
export interface ReportingRequest {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

/** An HTTP 200 JSON answer. */
export interface Answer {
  chunks: Buffer[];
  bytes: number;
  records: number;
  /** The data-level fault this answer carries, if any (for the request log). */
  fault?: FaultKind;
}

/** A rendered `sessions` answer, kept by query text: `now` the "now" it was rendered at, `settled` when it can no longer change. */
export type CachedAnswer = Answer & { now: number; settled: boolean };

export interface ReportingEndpointOptions {
  schema: GraphQLSchema;
  store: SessionDataset;
  windowRule: WindowRule;
  faults: () => EmulatorFaults;
  dice: FaultDice;
  countFault: (kind: FaultKind) => void;
  bodyCache?: Lru<string, CachedAnswer>;
  /** Prefixes this endpoint's keys in a `bodyCache` shared with other accounts' endpoints. */
  cachePrefix?: string;
}

/** Turns a record into the object to serialise; null when the record serialises as it is. */
type Projector = ((r: SessionRecord) => unknown) | null;

interface FastPlan {
  operation: OperationDefinitionNode;
  field: FieldNode;
  fieldDef: GraphQLField<unknown, unknown>;
  responseKey: string;
  location: SourceLocation;
  project: Projector;
}

type Prepared = { errors: readonly GraphQLError[] } | { errors?: undefined; document: DocumentNode; fast: FastPlan | undefined };

interface ExecContext {
  extraErrors: GraphQLError[];
  records: number;
  fault?: FaultKind;
}

/** A data-level failure of the `sessions` field, reported as graphql-js reports a resolver error. */
class FieldFailure extends GraphQLError {
  constructor(message: string, readonly kind?: FaultKind) {
    super(message);
  }
}

const RECORDS_PER_CHUNK = 2_000;

export class ReportingEndpoint {
  private readonly prepared = new Lru<string, Prepared>(512);
  private readonly rootValue: Record<string, unknown>;

  constructor(private readonly o: ReportingEndpointOptions) {
    this.rootValue = {
      sessions: (args: Record<string, unknown>, ctx: ExecContext, info: { fieldNodes: readonly FieldNode[]; path: { key: string | number } }) => {
        const [start, end] = this.span(args);
        let { selection, windowRecords } = this.resolveWindow(start, end);
        if (selection.count < windowRecords) ctx.fault = 'truncatedResults';
        if (this.o.dice.roll(this.o.faults().partialErrorRate)) {
          const partial = this.partial(selection);
          ctx.extraErrors.push(new GraphQLError(partial.message, { nodes: info.fieldNodes, path: [info.path.key] }));
          ctx.fault = 'partial';
          selection = partial.selection;
        }
        ctx.records += selection.count;
        return this.o.store.records(selection);
      },
      session: (args: { id: string }, ctx: ExecContext) => {
        const r = this.o.store.lookup(args.id) ?? null;
        if (r) ctx.records += 1;
        return r;
      },
    };
  }

  async handle(request: ReportingRequest): Promise<Answer> {
    const prepared = this.prepare(request.query);
    if (prepared.errors) return jsonAnswer({ errors: prepared.errors }, 0);
    const answer = prepared.fast && this.fastPath(prepared.fast, request);
    if (answer) return answer;
    const ctx: ExecContext = { extraErrors: [], records: 0 };
    const result = await execute({
      schema: this.o.schema,
      document: prepared.document,
      rootValue: this.rootValue,
      contextValue: ctx,
      variableValues: request.variables ?? undefined,
      operationName: request.operationName ?? undefined,
    });
    for (const e of result.errors ?? []) if (e.originalError instanceof FieldFailure) ctx.fault ??= e.originalError.kind;
    const errors = [...(result.errors ?? []), ...ctx.extraErrors];
    return jsonAnswer(errors.length ? { errors, data: result.data } : { data: result.data }, ctx.records, ctx.fault);
  }

  private prepare(query: string): Prepared {
    let prepared = this.prepared.get(query);
    if (prepared) return prepared;
    try {
      const document = parse(query);
      const errors = validate(this.o.schema, document);
      prepared = errors.length ? { errors } : { document, fast: planFastPath(this.o.schema, document) };
    } catch (err) {
      if (!(err instanceof GraphQLError)) throw err;
      prepared = { errors: [err] };
    }
    this.prepared.set(query, prepared);
    return prepared;
  }

  /** The answer written without graphql-js execution, or undefined to fall back to it. */
  private fastPath(plan: FastPlan, request: ReportingRequest): Answer | undefined {
    if (request.operationName && request.operationName !== plan.operation.name?.value) return undefined;
    let variableValues: Record<string, unknown> = {};
    if (plan.operation.variableDefinitions?.length) {
      const coerced = getVariableValues(this.o.schema, plan.operation.variableDefinitions, request.variables ?? {});
      if (coerced.errors) return undefined;
      variableValues = coerced.coerced;
    }
    let args: Record<string, unknown>;
    try {
      args = getArgumentValues(plan.fieldDef, plan.field, variableValues);
    } catch {
      return undefined;
    }
    const errorOf = (message: string) => ({ message, locations: [plan.location], path: [plan.responseKey] });
    const fieldError = (err: unknown): Answer => {
      if (!(err instanceof GraphQLError)) throw err;
      return jsonAnswer({ errors: [errorOf(err.message)], data: null }, 0, err instanceof FieldFailure ? err.kind : undefined);
    };

    let start: number;
    let end: number;
    try {
      [start, end] = this.span(args);
    } catch (err) {
      return fieldError(err);
    }
    // Late or amended data changes an answer without the clock moving: no cached bodies while it is set.
    const late = this.o.faults();
    const cache = late.holdBack?.length || late.amend?.length ? undefined : this.o.bodyCache;
    const key = cache ? `${this.o.cachePrefix ?? ''}${request.query}\u0000${JSON.stringify(request.variables ?? null)}\u0000${request.operationName ?? ''}` : '';
    let hit = cache?.get(key);
    if (hit && !hit.settled && hit.now !== this.o.store.now()) {
      cache?.delete(key);
      hit = undefined;
    }
    let window: ReturnType<ReportingEndpoint['resolveWindow']> | undefined;
    if (!hit) {
      try {
        window = this.resolveWindow(start, end);
      } catch (err) {
        return fieldError(err);
      }
    }

    const prefix = `"data":{${JSON.stringify(plan.responseKey)}:[`;
    if (this.o.dice.roll(this.o.faults().partialErrorRate)) {
      const partial = this.partial((window ?? this.resolveWindow(start, end)).selection);
      return { ...this.render(`{"errors":[${JSON.stringify(errorOf(partial.message))}],${prefix}`, partial.selection, plan.project), fault: 'partial' };
    }
    if (hit) {
      if (hit.fault) this.o.countFault('truncatedResults');
      return hit;
    }
    const { selection, windowRecords, settled } = window as NonNullable<typeof window>;
    const answer = this.render(`{${prefix}`, selection, plan.project);
    if (selection.count < windowRecords) answer.fault = 'truncatedResults';
    if (cache && answer.bytes <= cache.maxCost) cache.set(key, { ...answer, now: selection.now, settled });
    return answer;
  }

  /** The `start` and `end` arguments, with the span limit checked. */
  private span(args: Record<string, unknown>): [number, number] {
    const start = epochSecondsArg(args.start, 'start');
    const end = epochSecondsArg(args.end, 'end');
    const max = this.o.faults().maxSpanSeconds;
    if (max !== undefined && end - start > max) {
      this.o.countFault('maxSpan');
      throw new FieldFailure(
        `The time span between start and end (${end - start} seconds) exceeds the maximum span of ${max} seconds.`,
        'maxSpan',
      );
    }
    return [start, end];
  }

  /** The window's records after maxResults and truncateResultsTo. */
  private resolveWindow(start: number, end: number): { selection: Selection; windowRecords: number; settled: boolean } {
    const { store, windowRule } = this.o;
    const faults = this.o.faults();
    const all = store.select(start, end, windowRule);
    if (faults.maxResults !== undefined && all.count > faults.maxResults) {
      this.o.countFault('maxResults');
      throw new FieldFailure(
        `The query matches ${all.count} session records, which exceeds the maximum result size of ${faults.maxResults}; narrow the time window.`,
        'maxResults',
      );
    }
    let selection = all;
    if (faults.truncateResultsTo !== undefined && all.count > faults.truncateResultsTo) {
      this.o.countFault('truncatedResults');
      selection = all.take(faults.truncateResultsTo);
    }
    return { selection, windowRecords: all.count, settled: store.isSettled(end, windowRule) };
  }

  /** The partial-result fault: the first half of the records and an error saying the rest failed. */
  private partial(selection: Selection): { selection: Selection; message: string } {
    this.o.countFault('partial');
    const kept = Math.floor(selection.count / 2);
    return {
      selection: selection.take(kept),
      message: `Failed to load ${selection.count - kept} session records; the result is incomplete.`,
    };
  }

  /** prefix, the selected records joined by commas, `]}}`; in chunks (a million records would not fit one string). */
  private render(prefix: string, selection: Selection, project: Projector): Answer {
    const chunks: Buffer[] = [Buffer.from(prefix, 'utf8')];
    if (project === null) {
      // All fields in SDL order: slices of the days' pre-written text.
      chunks.push(...this.o.store.render(selection));
    } else {
      const records = this.o.store.records(selection);
      for (let i = 0; i < records.length; i += RECORDS_PER_CHUNK) {
        // V8's JSON.stringify of a whole array of plain objects beats assembling strings by hand.
        const json = JSON.stringify(records.slice(i, i + RECORDS_PER_CHUNK).map(project));
        chunks.push(Buffer.from((i === 0 ? '' : ',') + json.slice(1, -1), 'utf8'));
      }
    }
    chunks.push(Buffer.from(']}}', 'utf8'));
    let bytes = 0;
    for (const c of chunks) bytes += c.length;
    return { chunks, bytes, records: selection.count };
  }
}

function jsonAnswer(body: unknown, records: number, fault?: FaultKind): Answer {
  const buf = Buffer.from(JSON.stringify(body), 'utf8');
  return { chunks: [buf], bytes: buf.length, records, fault };
}

/**
 * A fast-path plan for a document that is one query operation selecting only `sessions` (alias
 * allowed), whose selections are plain fields (no fragments, directives or repeated response keys).
 * Anything else is left to graphql-js.
 */
export function planFastPath(schema: GraphQLSchema, document: DocumentNode): FastPlan | undefined {
  if (document.definitions.length !== 1) return undefined;
  const operation = document.definitions[0];
  if (operation?.kind !== Kind.OPERATION_DEFINITION || operation.operation !== 'query') return undefined;
  if (operation.directives?.length || operation.selectionSet.selections.length !== 1) return undefined;
  const field = operation.selectionSet.selections[0];
  if (field?.kind !== Kind.FIELD || field.name.value !== 'sessions' || field.directives?.length) return undefined;
  const fieldDef = schema.getQueryType()?.getFields().sessions;
  if (!fieldDef || !field.selectionSet || !field.loc || !document.loc) return undefined;
  const projection = compileProjection(field.selectionSet, getNamedType(fieldDef.type) as GraphQLObjectType);
  if (!projection) return undefined;
  return {
    operation,
    field,
    fieldDef,
    responseKey: field.alias?.value ?? field.name.value,
    location: getLocation(document.loc.source, field.loc.start),
    project: projection.identity ? null : (projection.project as unknown as (r: SessionRecord) => unknown),
  };
}

/**
 * The generated records hold every field in SDL order, so a selection of all fields in that order
 * serialises as the record itself; any other selection is copied into a new object.
 */
const RECORD_KEYS: Record<string, readonly string[]> = {
  Session: SESSION_FIELD_NAMES,
  Agent: AGENT_FIELD_NAMES,
  ExternalFields: EXTERNAL_FIELD_NAMES,
};

/** An object holding the selected fields only, in selection order (null where absent), as graphql-js returns them. */
function compileProjection(
  selectionSet: SelectionSetNode, type: GraphQLObjectType,
): { identity: boolean; project: (o: Record<string, unknown>) => unknown } | undefined {
  const steps: Array<[key: string, value: (o: Record<string, unknown>) => unknown]> = [];
  const fields = type.getFields();
  const own = RECORD_KEYS[type.name];
  let identity = own?.length === selectionSet.selections.length;
  for (const sel of selectionSet.selections) {
    if (sel.kind !== Kind.FIELD || sel.directives?.length || sel.arguments?.length) return undefined;
    const key = sel.alias?.value ?? sel.name.value;
    if (steps.some(([k]) => k === key)) return undefined; // graphql-js would merge the two; not worth copying
    const name = sel.name.value;
    if (key !== name || own?.[steps.length] !== key) identity = false;
    if (name === '__typename') {
      steps.push([key, () => type.name]);
      identity = false;
      continue;
    }
    const def = fields[name];
    if (!def) return undefined;
    const named = getNamedType(def.type);
    if (!isObjectType(named)) {
      steps.push([key, (o) => o[name] ?? null]);
      continue;
    }
    const inner = sel.selectionSet && compileProjection(sel.selectionSet, named);
    if (!inner) return undefined;
    if (!inner.identity) identity = false;
    steps.push([key, (o) => (o[name] == null ? null : inner.project(o[name] as Record<string, unknown>))]);
  }
  const project = (o: Record<string, unknown>): unknown => {
    const out: Record<string, unknown> = {};
    for (const [key, value] of steps) out[key] = value(o);
    return out;
  };
  return { identity, project };
}
