/**
 * Bad responses: records that break the schema, served through the corrupting proxy. Each case
 * runs twice over a data directory that already holds committed data:
 *
 * - `--on-invalid fail` (the default): exit 1, an error naming the session id (or the record's
 *   position when it has no id) and the field; nothing committed before is lost;
 * - `--on-invalid quarantine`: exit 0, the raw record in rejected_sessions with the reason, the
 *   rest loaded; a session already stored keeps its committed version.
 *
 * Records that are odd but valid (an unknown extra field, an exact duplicate, awkward strings)
 * must load, value for value. A clean run afterwards completes every case exactly.
 */
import { cp } from 'node:fs/promises';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { expectedRow } from '../helpers/read-store.js';
import type { SessionRecord } from '../../src/schema/session-fields.js';
import { startCorruptingProxy, type JsonRecord } from './corrupting-proxy.js';
import {
  check, cliEnv, compareExact, dayStart, DAY, excerpt, isoDay, newResult, startCli, TempDirs, timed, truthBetween,
  type ComparableRow, type ScenarioResult,
} from './harness.js';
import { checkCrashInvariants, checkFinal, readStore } from './inspect-store.js';

type Outcome =
  /** The record is fine: loaded as sent. */
  | { kind: 'loads' }
  /** An extra record is injected next to the target and rejected; the target itself loads. */
  | { kind: 'injected-rejected'; field: string; perTarget: number }
  /** The target's own record is invalid (rejected, `perTarget` rows per target in quarantine). */
  | { kind: 'own-rejected'; field: string; perTarget: number }
  /** The whole answer is unusable: the window fails whatever the policy. */
  | { kind: 'window-fails'; message: RegExp };

export interface BadCase {
  name: string;
  /** Replaces the target record by these records. */
  mutate(rec: JsonRecord): JsonRecord[];
  /** Edits the serialised answer (bytes JSON.stringify never writes). */
  raw?(body: string, targets: string[]): Buffer | string;
  outcome: Outcome;
  /** Extra flags (e.g. fewer attempts for answers that are retried). */
  flags?: string[];
}

const clone = (r: JsonRecord): JsonRecord => JSON.parse(JSON.stringify(r)) as JsonRecord;
const withField = (r: JsonRecord, k: string, v: unknown): JsonRecord => ({ ...clone(r), [k]: v });
/** Same record with one field changed, keeping the field order (so the answer keeps its usual shape). */
const change = (r: JsonRecord, k: string, v: unknown): JsonRecord => {
  const o = clone(r);
  o[k] = v;
  return o;
};

export const TRICKY_NOTES = 'a},{"id":"x"}\\n "quoted" \\ back\\slash \u2028 \u00e9 \ud83d\ude00 \t tab';

export const BAD_CASES: BadCase[] = [
  {
    name: 'a record with no id (injected next to a real one)',
    mutate: (r) => {
      const { id: _id, ...rest } = clone(r);
      return [r, rest];
    },
    outcome: { kind: 'injected-rejected', field: 'id', perTarget: 1 },
  },
  {
    name: 'a record whose id is null (injected)',
    mutate: (r) => [r, change(r, 'id', null)],
    outcome: { kind: 'injected-rejected', field: 'id', perTarget: 1 },
  },
  {
    name: 'a string where an integer belongs (started: "17")',
    mutate: (r) => [change(r, 'started', '17')],
    outcome: { kind: 'own-rejected', field: 'started', perTarget: 1 },
  },
  {
    name: 'a fraction where an integer belongs (duration: 1.5)',
    mutate: (r) => [change(r, 'duration', 1.5)],
    outcome: { kind: 'own-rejected', field: 'duration', perTarget: 1 },
  },
  {
    name: 'a nested object where a string belongs (agent: {name: {x: 1}})',
    mutate: (r) => [change(r, 'agent', { ...((r.agent as JsonRecord | null) ?? { id: null, email: null }), name: { x: 1 } })],
    outcome: { kind: 'own-rejected', field: 'agent.name', perTarget: 1 },
  },
  {
    name: 'a boolean field holding a string (recording: "yes")',
    mutate: (r) => [change(r, 'recording', 'yes')],
    outcome: { kind: 'own-rejected', field: 'recording', perTarget: 1 },
  },
  {
    name: 'an unknown extra field (ignored: the record loads)',
    mutate: (r) => [withField(r, 'surprise', { nested: [1, 2, 3] })],
    outcome: { kind: 'loads' },
  },
  {
    name: 'the same id twice with different values in one answer',
    mutate: (r) => [r, change(r, 'duration', 987_654)],
    outcome: { kind: 'own-rejected', field: 'id', perTarget: 2 },
  },
  {
    name: 'the same id twice with different values, the second spelled with a JSON escape',
    mutate: (r) => [r, change(r, 'duration', 987_654)],
    raw: (body, targets) => {
      let out = body;
      for (const id of targets) {
        const token = `{"id":"${id}"`;
        const second = out.indexOf(token, out.indexOf(token) + 1);
        if (second < 0) continue;
        const c = id.charCodeAt(0).toString(16).padStart(4, '0');
        out = `${out.slice(0, second)}{"id":"\\u${c}${id.slice(1)}"${out.slice(second + token.length)}`;
      }
      return out;
    },
    outcome: { kind: 'own-rejected', field: 'id', perTarget: 2 },
  },
  {
    name: 'the same record twice, identical (dropped: loads once)',
    mutate: (r) => [r, clone(r)],
    outcome: { kind: 'loads' },
  },
  {
    name: 'a list entry that is not an object (null)',
    mutate: (r) => [r, null as unknown as JsonRecord],
    outcome: { kind: 'injected-rejected', field: '', perTarget: 1 },
  },
  {
    name: 'awkward but valid values: quotes, backslashes, "},{", U+2028, emoji, 40 000-character string, negative and empty',
    mutate: (r) => {
      const o = clone(r);
      o.externalFields = { ...((o.externalFields as JsonRecord | null) ?? {}), notes: TRICKY_NOTES, customerName: 'x'.repeat(40_000), customerOs: '' };
      o.duration = -5;
      o.pin = '000123';
      return [o];
    },
    outcome: { kind: 'loads' },
  },
  {
    name: 'an integer beyond the 64-bit range (duration: 100000000000000000000)',
    mutate: (r) => [change(r, 'duration', '@@BIG@@')],
    raw: (body) => body.split('"@@BIG@@"').join('100000000000000000000'),
    outcome: { kind: 'own-rejected', field: 'duration', perTarget: 1 },
  },
  {
    name: 'a session id spelled with a JSON escape (valid: stored decoded)',
    mutate: (r) => [r],
    raw: (body, targets) => {
      let out = body;
      for (const id of targets) out = out.split(`{"id":"${id}"`).join(`{"id":"\\u${id.charCodeAt(0).toString(16).padStart(4, '0')}${id.slice(1)}"`);
      return out;
    },
    outcome: { kind: 'loads' },
  },
  {
    name: 'a NUL character in a string (escaped: valid JSON)',
    mutate: (r) => [change(r, 'agentIp', 'before\u0000after')],
    outcome: { kind: 'loads' },
  },
  {
    name: 'bytes that are not UTF-8 inside a string',
    mutate: (r) => [change(r, 'customerIp', '@@BAD-UTF8@@')],
    raw: (body) => {
      const parts = body.split('"@@BAD-UTF8@@"');
      return Buffer.concat(parts.flatMap((p, i) => (i ? [Buffer.from([0x22, 0x61, 0xff, 0xfe, 0x62, 0x22]), Buffer.from(p)] : [Buffer.from(p)])));
    },
    outcome: { kind: 'loads' },
  },
  {
    name: 'a raw control character inside a string (invalid JSON)',
    mutate: (r) => [change(r, 'customerIp', '@@RAW-NEWLINE@@')],
    raw: (body) => body.split('@@RAW-NEWLINE@@').join('line1\nline2'),
    outcome: { kind: 'window-fails', message: /not complete JSON|not valid JSON|JSON/i },
    flags: ['--max-attempts', '2'],
  },
];

export interface BadResponseOptions {
  seed: number;
  /** Only these cases (by index); default all. */
  only?: number[];
  /** Cases run side by side (each with its own proxy and directories). */
  parallel?: number;
  log?: (line: string) => void;
}

export async function runBadResponses(o: BadResponseOptions): Promise<ScenarioResult[]> {
  const log = o.log ?? (() => {});
  const nowS = Math.floor(Date.now() / 1000);
  const from = dayStart(10, nowS);
  const mid = from + 3 * DAY;
  const to = from + 6 * DAY;
  const emu = await startEmulator({ seed: (o.seed % 1000) + 1, from: from - DAY, to: nowS, now: nowS, sessionsPerDay: 120 });
  const temp = new TempDirs();
  const out: ScenarioResult[] = [];
  try {
    // Committed data: the first half of the range, loaded cleanly.
    const baseline = await temp.make('bad-baseline-');
    const b = await startCli(['backfill', '--from', isoDay(from), '--to', isoDay(mid), '--chunk', '1d', '--json', '--no-progress'], cliEnv(emu, baseline)).result;
    if (b.code !== 0) throw new Error(`baseline backfill failed: ${excerpt(b)}`);
    const truth = truthBetween(emu, from, to);
    const committed = truthBetween(emu, from, mid);
    // Targets: one session already committed (day 1), one new (day 4); neither near a window edge.
    const pick = (day: number) => {
      const list = emu.dataset.sessionsStartedIn(from + day * DAY + 3600, from + (day + 1) * DAY - 3600);
      return list[Math.floor(list.length / 2)]!;
    };
    const targets = [pick(1), pick(4)];
    const cases = BAD_CASES.map((c, i) => ({ c, i })).filter(({ i }) => !o.only || o.only.includes(i));
    const results = cases.map(({ c }) => newResult('3. bad responses', c.name));
    out.push(...results);
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const k = next++;
        const { c } = cases[k]!;
        const r = results[k]!;
        await timed(r, () => runCase(c, { emu, temp, baseline, from, to, truth, committed, targets, r }));
        log(`bad responses: ${c.name}: ${r.failures.length ? 'FAILED ' + r.failures[0] : 'ok'}`);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, o.parallel ?? 2) }, worker));
  } finally {
    await emu.close();
    await temp.cleanup();
  }
  return out;
}

interface CaseContext {
  emu: Emulator;
  temp: TempDirs;
  baseline: string;
  from: number;
  to: number;
  truth: Map<string, ComparableRow>;
  committed: Map<string, ComparableRow>;
  targets: SessionRecord[];
  r: ScenarioResult;
}

async function runCase(c: BadCase, x: CaseContext): Promise<void> {
  const { r, emu } = x;
  const targetIds = new Set(x.targets.map((t) => t.id));
  /** The target records (and the records injected next to them) as the client decodes them. */
  const received: unknown[] = [];
  const proxy = await startCorruptingProxy(emu.url, {
    rewrite: (records) => {
      if (!records.some((rec) => targetIds.has(rec.id as string))) return undefined;
      return records.flatMap((rec) => {
        if (!targetIds.has(rec.id as string)) return [rec];
        r.injected++;
        return c.mutate(rec);
      });
    },
    onSent: (body) => {
      let list: unknown[] = [];
      try {
        list = (JSON.parse(body.toString('utf8')) as { data: { sessions: unknown[] } }).data.sessions;
      } catch {
        return; // not JSON at all (the raw control character case)
      }
      for (const rec of list) {
        const id = (rec as JsonRecord | null)?.id;
        if (typeof id !== 'string' || targetIds.has(id)) received.push(rec);
      }
    },
    ...(c.raw ? { raw: (body: string) => c.raw!(body, [...targetIds]) } : {}),
  });
  const args = ['backfill', '--from', isoDay(x.from), '--to', isoDay(x.to), '--chunk', '1d', '--concurrency', '1', '--json', '--no-progress', ...(c.flags ?? [])];
  // What must be stored when odd-but-valid records load: the targets as JSON.parse reads them.
  const expectLoaded = () => {
    const m = new Map(x.truth);
    for (const rec of received) if (rec && typeof (rec as JsonRecord).id === 'string') m.set((rec as SessionRecord).id, expectedRow(rec as SessionRecord));
    return m;
  };
  let failDir = '';
  try {
    for (const policy of ['fail', 'quarantine'] as const) {
      r.trials++;
      const dir = await x.temp.make(`bad-${policy}-`);
      if (policy === 'fail') failDir = dir;
      await cp(x.baseline, dir, { recursive: true });
      const res = await startCli([...args, '--on-invalid', policy], cliEnv({ url: proxy.url, apiKey: emu.apiKey }, dir)).result;
      const errLines = res.stderr.split('\n').filter((l) => l.startsWith('error:')).join('\n');
      const snap = await readStore(dir, 'both');
      const inv = checkCrashInvariants(snap, 'both', emu);
      // The invariant compares covered windows with the emulator: a loaded odd-but-valid record differs from it on purpose.
      const invProblems = c.outcome.kind === 'loads' ? [] : inv.problems;
      r.rowsCompared += inv.compared;
      check(r, invProblems.length === 0, `${policy}: state after the run: ${invProblems.slice(0, 2).join('; ')}`);
      // Nothing committed before is lost: every baseline session is still there (new or old version).
      const ids = new Set(snap.rows.map((row) => String(row.session_id)));
      const lost = [...x.committed.keys()].filter((id) => !ids.has(id));
      r.rowsCompared += x.committed.size;
      check(r, lost.length === 0, `${policy}: ${lost.length} committed sessions lost (e.g. ${lost[0]})`);

      if (c.outcome.kind === 'loads') {
        check(r, res.code === 0, `${policy}: a valid answer failed the run: ${excerpt(res)}`);
        const fin = await checkFinal(dir, 'both', expectLoaded());
        r.rowsCompared += fin.compared;
        check(r, fin.problems.length === 0, `${policy}: ${fin.problems.slice(0, 2).join('; ')}`);
        continue;
      }
      if (c.outcome.kind === 'window-fails') {
        check(r, res.code === 1, `${policy}: expected exit 1, got ${excerpt(res)}`);
        check(r, c.outcome.message.test(errLines) && /window \S+ failed/.test(errLines), `${policy}: unclear error: ${errLines.slice(0, 300)}`);
        if (r.notes.length === 0) r.notes.push(`both policies: ${errLines.split('\n')[0]!.replace(/^error: \S+ \S+ failed: /, '').slice(0, 240)}`);
        continue;
      }
      const field = c.outcome.field;
      if (policy === 'fail') {
        check(r, res.code === 1, `fail: expected exit 1, got ${excerpt(res)}`);
        const first = x.targets[0]!.id;
        const namesRecord = c.outcome.kind === 'own-rejected' ? errLines.includes(JSON.stringify(first)) : /#\d+ \(no id\)/.test(errLines);
        check(r, namesRecord, `fail: the error does not name the session (${first}): ${errLines.slice(0, 300)}`);
        check(r, errLines.includes(`field ${field || '(record)'}`), `fail: the error does not name the field ${field || '(record)'}: ${errLines.slice(0, 300)}`);
        check(r, /run the same command again/.test(errLines), `fail: the error does not say how to continue: ${errLines.slice(0, 200)}`);
        if (r.notes.length === 0) r.notes.push(`fail: ${errLines.split('\n')[0]!.replace(/^error: \S+ \S+ failed: /, '').slice(0, 240)}`);
      } else {
        check(r, res.code === 0, `quarantine: expected exit 0, got ${excerpt(res)}`);
        const want = c.outcome.perTarget * x.targets.length;
        check(r, snap.rejected.length === want, `quarantine: ${snap.rejected.length} rows in rejected_sessions, expected ${want}`);
        for (const row of snap.rejected) {
          check(r, String(row.field ?? '') === field && String(row.reason ?? '').includes(`field ${field || '(record)'}`), `quarantine: rejected row with field ${row.field}, reason ${row.reason}`);
          let raw: unknown;
          try {
            raw = JSON.parse(String(row.raw));
          } catch {
            raw = undefined;
          }
          const matches = received.some((s) => JSON.stringify(s) === JSON.stringify(raw));
          check(r, matches, `quarantine: the raw record kept is not the record received: ${String(row.raw).slice(0, 120)}`);
          if (c.outcome.kind === 'own-rejected') check(r, targetIds.has(String(row.session_id)), `quarantine: rejected row names session ${row.session_id}`);
        }
        if (res.code === 0) {
          const s = JSON.parse(res.stdout) as { sessions: { rejected: number } };
          check(r, s.sessions.rejected === want, `quarantine: the summary counts ${s.sessions.rejected} rejected, expected ${want}`);
        }
        // The rest loaded; a target whose own record was rejected keeps its committed version (or is absent when new).
        const expect = new Map(x.truth);
        if (c.outcome.kind === 'own-rejected') for (const t of x.targets) if (!x.committed.has(t.id)) expect.delete(t.id);
        const cmp = compareExact('DuckDB table', expect, snap.tableRows);
        r.rowsCompared += cmp.compared;
        check(r, cmp.problems.length === 0, `quarantine: ${cmp.problems.slice(0, 2).join('; ')}`);
        r.notes.push(`quarantine: ${snap.rejected.length} rows in rejected_sessions, reason e.g. "${String(snap.rejected[0]?.reason ?? '').slice(0, 120)}"`);
      }
    }
  } finally {
    await proxy.close();
  }
  // The state the failed run left: a clean run completes it exactly.
  const clean = await startCli(args, cliEnv(emu, failDir)).result;
  check(r, clean.code === 0, `the clean run after the failed one failed: ${excerpt(clean)}`);
  const fin = await checkFinal(failDir, 'both', x.truth);
  r.rowsCompared += fin.compared;
  check(r, fin.problems.length === 0, `after the clean run: ${fin.problems.slice(0, 2).join('; ')}`);
}
