import type { SessionRecord } from '../schema/session-fields.js';
import { compareCodePoints, compareValues } from './compare-values.js';
import { orderKeys, resolveWindow, selectedLeaves, shapeRecord, type ListPage, type ListRequest } from './list-request.js';
import type { FilterExpr } from './parse-filter.js';
import { ID_FIELD, STARTED_FIELD, leafText, readLeaf } from './session-fields.js';

/**
 * Answers a list request over records in memory as `queryDuckDb` does over the `sessions` table;
 * records with the same `id` keep their input order. JavaScript's engine backtracks (RE2 never
 * does): a pathological pattern such as `(a*)*b` over long text can take very long here.
 */
export function evaluateInMemory(records: readonly SessionRecord[], req: ListRequest): ListPage {
  const { startedFrom, startedTo, filter } = req;
  const matching = records.filter((r) => {
    if (startedFrom !== null || startedTo !== null) {
      const s = readLeaf(r, STARTED_FIELD) as number | null;
      if (s === null || (startedFrom !== null && s < startedFrom) || (startedTo !== null && s >= startedTo)) return false;
    }
    return filter === null || passes(filter, r);
  });

  const keys = orderKeys(req);
  const sorted = matching
    .map((record) => ({ record, values: keys.map((k) => readLeaf(record, k.field)) }))
    .sort((a, b) => {
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!;
        const x = a.values[i] ?? null;
        const y = b.values[i] ?? null;
        // `id` is an identifier, not a name: exact code-point order, as SQL's binary session_id.
        const c = key.field === ID_FIELD && typeof x === 'string' && typeof y === 'string' ? compareCodePoints(x, y) : compareValues(x, y);
        if (c !== 0) return key.descending ? -c : c;
      }
      return 0;
    });

  const { offset, limit, pageSize } = resolveWindow(req.paging, sorted.length);
  const leaves = selectedLeaves(req);
  const items = sorted.slice(offset, offset + limit).map(({ record }) => shapeRecord(leaves, (leaf) => readLeaf(record, leaf)));
  return { items, total: sorted.length, offset, pageSize, paging: req.paging };
}

function passes(expr: FilterExpr, record: SessionRecord): boolean {
  switch (expr.type) {
    case 'and': return expr.operands.every((e) => passes(e, record));
    case 'or': return expr.operands.some((e) => passes(e, record));
    case 'match': return expr.pattern.js.test(expr.field.field ? leafText(readLeaf(record, expr.field.field)) : '') !== expr.negated;
  }
}
