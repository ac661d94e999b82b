// The dashboard page: fetches /api/… from the process that served it (nothing else) and draws it.
// Plain browser JavaScript, no build step; charts with uPlot (served from node_modules).
'use strict';

const $ = (id) => document.getElementById(id);
// One style everywhere: thousands with a comma, dates and times ISO 8601 in UTC, durations in h/min/s.
const fmt = new Intl.NumberFormat('en-US');
const state = { accessLost: false, running: false, timer: null, sessionsSeq: 0, page: 0, total: 0, chartFrom: null, chartTo: null, plots: [], format: null, demo: false };
/** `1 session`, `2,048 sessions`. */
// A figure not known (null: a run that died, its sessions in a bucket's day files) is said to be
// unknown, never shown as a false zero.
const count = (n, one, many = `${one}s`) => (n === null || n === undefined ? `an unknown number of ${many}` : `${fmt.format(n)} ${n === 1 ? one : many}`);

// ---- access -----------------------------------------------------------------------------------
// The address the dashboard printed carries its token (?token=…): the page takes it out of the
// address bar at once, trades it for a browser session (POST /api/session) and keeps that session
// in sessionStorage, which belongs to this origin only (its port included; a cookie would reach
// every port of the host) and ends with the tab. Every request sends it as Authorization: Bearer.

const SESSION_KEY = 'session-etl-dashboard-session';

/** The session kept for this tab, or null. */
function session() {
  try {
    const s = JSON.parse(sessionStorage.getItem(SESSION_KEY) || 'null');
    return s && typeof s.id === 'string' ? s : null;
  } catch {
    return null;
  }
}

/** A token in the address: taken out of it (and of the history entry), then traded for a session. */
async function signIn() {
  const q = new URLSearchParams(location.search);
  const token = q.get('token');
  if (token === null) return;
  q.delete('token');
  const rest = q.toString();
  history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`);
  const res = await fetch('/api/session', { method: 'POST', headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } });
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new AccessError(body.error || `HTTP ${res.status}`);
  sessionStorage.setItem(SESSION_KEY, JSON.stringify({ id: body.session, expiresAt: body.expiresAt }));
}

/** A request refused for want of a live session: the page stops asking and says what to do. */
class AccessError extends Error {}

function authHeaders() {
  const s = session();
  return s ? { Authorization: `Bearer ${s.id}` } : {};
}

function accessLost(message) {
  sessionStorage.removeItem(SESSION_KEY);
  state.accessLost = true;
  clearTimeout(state.timer);
  const notice = $('notice');
  notice.hidden = false;
  notice.dataset.kind = 'access';
  notice.textContent = message;
  $('health-word').textContent = 'Not signed in';
}

async function api(path) {
  const res = await fetch(withAccount(path), { headers: { Accept: 'application/json', ...authHeaders() }, credentials: 'omit' });
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (res.status === 401) {
    accessLost(body.error || 'an access token is required: open the address the dashboard printed');
    throw new AccessError(body.error || `HTTP ${res.status}`);
  }
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
}

/** The CSV of the query: a one-use ticket (a download cannot send a header), then the browser's own download. */
async function downloadCsv(e) {
  e.preventDefault();
  const err = $('sessions-error');
  try {
    const res = await fetch('/api/download', { method: 'POST', headers: { Accept: 'application/json', ...authHeaders() }, credentials: 'omit' });
    const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
    if (res.status === 401) return accessLost(body.error || `HTTP ${res.status}`);
    if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
    const q = queryParams();
    q.set('ticket', body.ticket);
    const a = el('a', { href: withAccount(`/api/sessions.csv?${q}`) });
    a.download = 'sessions.csv';
    document.body.append(a);
    a.click();
    a.remove();
  } catch (x) {
    err.hidden = false;
    err.textContent = x.message;
  }
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue;
    if (k === 'text') e.textContent = v;
    else if (k === 'class') e.className = v;
    else if (k.startsWith('data') || k === 'title' || k === 'role' || k === 'type' || k === 'href' || k === 'aria-label') e.setAttribute(k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), v);
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const iso = (s) => (s ? s.replace(/\.\d{3}Z$/, 'Z').replace('T', ' ') : '–');
const dateOfEpoch = (t) => new Date(t * 1000).toISOString().slice(0, 10);
const pad = (n) => String(n).padStart(2, '0');
/** A duration in one style: `4.2 s`, `42 s`, `3 min 04 s`, `5 h 07 min`, `3 d 04 h`. */
function span(seconds) {
  if (seconds === null || seconds === undefined) return '–';
  const s = Math.max(0, seconds);
  if (s < 9.95) return `${s.toFixed(1)} s`;
  const t = Math.round(s);
  if (t < 60) return `${t} s`;
  if (t < 3600) return `${Math.floor(t / 60)} min ${pad(t % 60)} s`;
  const m = Math.round(t / 60);
  if (m < 48 * 60) return `${Math.floor(m / 60)} h ${pad(m % 60)} min`;
  const h = Math.round(t / 3600);
  return `${Math.floor(h / 24)} d ${pad(h % 24)} h`;
}
const duration = (ms) => (ms === null || ms === undefined ? '–' : span(ms / 1000));

// ---- health, live run -------------------------------------------------------------------------

function drawOverview(o) {
  const h = $('health');
  h.dataset.state = o.health.state;
  $('health-word').textContent = o.health.state[0].toUpperCase() + o.health.state.slice(1);
  $('health-summary').textContent = o.health.summary;
  $('health-reasons').replaceChildren(...o.health.reasons.map((r) => el('li', { text: r })));
  state.format = o.format;
  state.demo = o.demo;
  if (o.account) {
    $('account').textContent = `account ${o.account}`;
    document.title = `session-etl: account ${o.account}`;
  }
  $('checkpoint').textContent = o.checkpoint ? `${iso(o.checkpoint)} (${span(o.lagSeconds)} behind now)` : 'none yet';
  $('total-sessions').textContent = o.totalSessions === null ? '–' : fmt.format(o.totalSessions);
  if (o.pendingRows) $('total-sessions').append(el('small', { text: ` +${fmt.format(o.pendingRows)} committed, merged by the next run` }));
  if (o.pendingPartitions && o.pendingPartitions.length && o.datasetSessions !== null && o.datasetSessions !== undefined) {
    const n = o.pendingPartitions.length;
    $('total-sessions').append(
      el('small', {
        dataTestid: 'pending-partitions',
        text: ` (the dataset, which the charts and the sessions list read, holds ${fmt.format(o.datasetSessions)} while ${count(n, 'day')} (${o.pendingPartitions.slice(0, 3).join(', ')}${n > 3 ? ', …' : ''}) ${n === 1 ? 'waits' : 'wait'} for ${n === 1 ? 'its' : 'their'} rewrite by the next run)`,
      }),
    );
  }
  // The page cannot know whether a scheduler runs: it says when one would.
  $('next-run').textContent = o.nextRun
    ? `would run at ${iso(o.nextRun.at)} if \`session-etl schedule\` runs (cron "${o.nextRun.cron}", ${o.nextRun.timezone})`
    : o.demo
      ? 'none: a demo directory (session-etl demo makes it again)'
      : '–';
  const last = o.runs.find((r) => r.outcome !== 'running');
  $('last-run').textContent = last ? `${last.kind} ${last.outcome}, ${iso(last.endedAt || last.startedAt)}` : 'none yet';
  // When the page read the figures (relative, kept current), and when the state they come from was written.
  state.readAt = Date.parse(o.readAt) || Date.now();
  state.asOf = o.asOf;
  drawReadAt();
  const notice = $('notice');
  notice.hidden = !o.notice;
  notice.textContent = o.notice || '';
  delete notice.dataset.kind;

  const live = $('live-run');
  live.hidden = !o.running;
  state.running = Boolean(o.running);
  if (o.running) {
    const r = o.running;
    const parts = [`${r.command}, pid ${r.pid}, started ${iso(r.startedAt)}`];
    if (r.windowsTotal !== null) parts.push(`${fmt.format(r.windowsDone)} of ${count(r.windowsTotal, 'window')}`);
    if (r.sessions !== null) parts.push(`${count(r.sessions, 'session')} so far`);
    if (r.eta) parts.push(`ETA ${iso(r.eta)}`);
    if (r.progressAt) parts.push(`(as of ${iso(r.progressAt)})`);
    $('live-text').textContent = parts.join(' · ');
    live.dataset.windowsDone = r.windowsDone ?? '';
    live.dataset.windowsTotal = r.windowsTotal ?? '';
    $('live-bar').style.width = r.windowsTotal ? `${(100 * r.windowsDone) / r.windowsTotal}%` : '0%';
  }
  $('refresh-note').textContent = state.running ? 'refreshing every 3 s while the run goes' : '';
  drawRuns(o.runs, o.running);
}

/** `read 5 s ago · state written 2026-… (3 h 04 min before)`: read now, from a state a run wrote earlier. */
function drawReadAt() {
  if (!state.readAt) return;
  const ago = Math.max(0, (Date.now() - state.readAt) / 1000);
  const read = ago < 2 ? 'read just now' : `read ${span(Math.floor(ago))} ago`;
  const written = state.asOf ? ` · state written ${iso(state.asOf)} by the last run (${span((state.readAt - Date.parse(state.asOf)) / 1000)} before)` : '';
  $('as-of').textContent = read + written;
}
setInterval(drawReadAt, 1000);

// ---- coverage calendar ------------------------------------------------------------------------

/** The calendar's states in the words `session-etl status` uses. */
const DAY_WORDS = {
  covered: 'exported',
  partial: 'partial day (only part of it exported)',
  hole: 'coverage hole (a gap between exported ranges)',
  'not-yet': 'not exported yet',
};
const GAP_WORDS = { hole: 'Coverage hole', 'after-checkpoint': 'Not exported yet', exporting: 'Being exported by the run going now' };

function drawCoverage(c) {
  const cal = $('calendar');
  const max = Math.max(1, ...c.days.map((d) => d.sessions));
  const cells = [];
  const months = [];
  if (c.days.length) {
    // Weeks as columns, Monday first, like a wall calendar turned sideways; a month's label above
    // the week of its first day (or the first week shown).
    const firstDow = (new Date(`${c.days[0].date}T00:00:00Z`).getUTCDay() + 6) % 7;
    for (let i = 0; i < firstDow; i++) cells.push(el('span', { class: 'day pad' }));
    let lastLabel = -4;
    c.days.forEach((d, i) => {
      const col = Math.floor((firstDow + i) / 7);
      if (i !== 0 && !d.date.endsWith('-01')) return;
      // Too close to the label before: a month's first day wins over the first (partial) week's.
      if (col - lastLabel < 4) {
        if (months.length !== 1 || i === 0) return;
        months.pop();
      }
      const label = el('span', { class: 'month', text: d.date.slice(0, 7), dataTestid: 'calendar-month' });
      label.style.gridColumn = `${col + 1} / span 4`;
      months.push(label);
      lastLabel = col;
    });
  }
  for (const d of c.days) {
    const level = d.sessions === 0 ? 0 : Math.min(4, 1 + Math.floor((4 * d.sessions) / (max + 1)));
    const anomaly = d.anomaly ? `\nvolume anomaly: ${fmt.format(d.anomaly.sessions)} sessions, expected about ${fmt.format(d.anomaly.expected)}` : '';
    const title = `${d.date}: ${DAY_WORDS[d.state] || d.state}${stored(d.sessions)}${anomaly}${d.command ? `\nfill it: ${d.command}` : ''}`;
    const cell = el('button', { type: 'button', class: `day ${d.state} l${level}${d.anomaly ? ' anomaly' : ''}`, dataTestid: 'coverage-day', dataDate: d.date, dataState: d.state, title, 'aria-label': title });
    if (d.anomaly) cell.dataset.anomaly = `${d.anomaly.sessions}/${d.anomaly.expected}`;
    cell.addEventListener('click', () => showDay(d));
    cells.push(cell);
  }
  cal.replaceChildren(...cells);
  $('calendar-months').replaceChildren(...months);
  $('calendar-weekdays').hidden = !c.days.length;
  if (!c.days.length) cal.replaceChildren(el('p', { class: 'muted', text: 'Nothing covered yet.' }));
  $('gaps').replaceChildren(
    ...c.gaps.map((g) =>
      el(
        'li',
        { dataKind: g.kind },
        el('span', { text: `${GAP_WORDS[g.kind] || g.kind} ${iso(g.from)} – ${iso(g.to)}${g.command ? ': ' : ''}` }),
        g.command ? el('code', { dataTestid: 'hole-command', text: g.command }) : null,
      ),
    ),
  );
  const note = $('calendar-note');
  note.hidden = !state.demo;
  note.textContent = state.demo
    ? 'A demo directory: its emulator ended with the demo, so no command can fill what is missing here. `session-etl demo` (npm start) makes it again.'
    : '';
}

/** A day's stored sessions, unless the directory has no dataset to count them in (format duckdb). */
const stored = (n) => (state.format === 'duckdb' ? '' : `, ${count(n, 'session')} stored`);

function showDay(d) {
  const p = $('day-detail');
  p.replaceChildren(el('strong', { text: d.date }), ` ${DAY_WORDS[d.state] || d.state}${stored(d.sessions)}. `);
  if (d.command) p.append('Fill it with ', el('code', { dataTestid: 'day-command', text: d.command }));
  if (d.anomaly) {
    p.append(
      el('span', { dataTestid: 'day-anomaly', text: `Volume anomaly: ${fmt.format(d.anomaly.sessions)} sessions, expected about ${fmt.format(d.anomaly.expected)} (its weekday's median).${d.anomaly.command ? ' Compare it with the source: ' : ''}` }),
      d.anomaly.command ? el('code', { dataTestid: 'anomaly-command', text: d.anomaly.command }) : '',
    );
  }
}

// ---- runs -------------------------------------------------------------------------------------

/** The runs on one time line: each a segment from its start to its end (or now), coloured by outcome. */
function drawTimeline(runs) {
  const box = $('run-timeline');
  const now = Date.now();
  const spans = runs.map((r) => ({ r, start: Date.parse(r.startedAt), end: r.endedAt ? Date.parse(r.endedAt) : now }));
  if (!spans.length) return box.replaceChildren();
  const min = Math.min(...spans.map((s) => s.start));
  const max = Math.max(...spans.map((s) => s.end), min + 1);
  box.replaceChildren(
    ...spans.map(({ r, start, end }) => {
      const seg = el('div', { class: `seg ${r.outcome}`, title: `${r.kind} ${r.outcome}, ${iso(r.startedAt)}, ${duration(end - start)}` });
      seg.style.left = `${(100 * (start - min)) / (max - min)}%`;
      seg.style.width = `${(100 * (end - start)) / (max - min)}%`;
      return seg;
    }),
  );
  $('timeline-from').textContent = iso(new Date(min).toISOString());
  $('timeline-to').textContent = iso(new Date(max).toISOString());
}

/**
 * What a failed verify leaves, in words: a verify compares the store with the source and changes it
 * only with --repair, so there are no committed windows to continue from.
 */
function afterVerify(r) {
  return /^the store differs from the source/.test(r.error)
    ? `It fetched ${count(r.windows, 'window')} and compared them: the store differs from the source on the days the error names. Run the command it gives to make the store equal the source.`
    : `It stopped after ${count(r.windows, 'window')}, before it finished comparing: run the same verify again (a verify changes the store only with --repair).`;
}

function drawRuns(runs, running) {
  drawTimeline(runs);
  $('runs').replaceChildren(
    ...(runs.length ? runs : []).map((r) => {
      const range = r.rangeFrom ? `${iso(r.rangeFrom)} – ${iso(r.rangeTo)}` : '';
      const live = r.outcome === 'running' && running && running.runId === r.runId ? running : null;
      // The run's progress: the live one's windows done of its total; a run that ended is done (its
      // colour says how), whatever it took: a duration against the longest run read as progress.
      const bar = el('div', { class: 'bar small', dataTestid: 'run-bar' }, el('div', { class: `bar-fill ${r.outcome}` }));
      bar.firstChild.style.width = r.outcome !== 'running' ? '100%' : live && live.windowsTotal ? `${(100 * live.windowsDone) / live.windowsTotal}%` : '0%';
      const num = (v) => (v === null || v === undefined ? 'unknown' : fmt.format(v));
      // A run that died recorded no figures of its own: what the store holds of it is shown (its
      // sessions, windows, days); its requests, retries, 429s and pauses were never recorded.
      const died = r.outcome === 'died';
      const sessions =
        r.sessionsNew === null && r.sessionsUpdated === null
          ? `${count(r.sessionsWritten, 'session')} (new and updated not known)`
          : `${count(r.sessionsWritten, 'session')} (${num(r.sessionsNew)} new, ${num(r.sessionsUpdated)} updated)`;
      // A run going now records its figures at its end: show its progress instead of zeros.
      const figures = live
        ? [
            live.windowsTotal !== null ? `${fmt.format(live.windowsDone)} of ${count(live.windowsTotal, 'window')} done` : 'starting',
            live.sessions !== null ? `${count(live.sessions, 'session')} so far` : null,
            'requests, retries and 429s are counted at its end',
          ]
            .filter(Boolean)
            .join(' · ')
        : (died
            ? [sessions, 'requests, retries, 429s and pauses not known (it died before recording them)']
            : [sessions, count(r.requests, 'request'), count(r.retries, 'retry', 'retries'), count(r.rateLimited, '429', '429s'), `paused ${duration(r.pausedMs || 0)}`]
          ).join(' · ');
      const row = el(
        'article',
        { class: `run ${r.outcome}`, dataTestid: 'run', dataStatus: r.outcome, dataRunId: r.runId },
        el('div', { class: 'run-head' }, el('span', { class: `badge ${r.outcome}`, text: r.outcome }), el('strong', { text: ` ${r.kind} ` }), el('span', { class: 'muted', text: range })),
        el('div', { class: 'muted', text: `started ${iso(r.startedAt)} · ${r.outcome === 'running' ? 'going' : `took ${duration(r.durationMs)}`} · ${r.runId}` }),
        bar,
        el('div', { dataTestid: 'run-figures', text: figures }),
      );
      if (r.error) {
        row.append(el('div', { class: 'error', text: `Error: ${r.error}` }));
        row.append(el('div', { class: 'muted', dataTestid: 'run-after', text: r.kind === 'verify' ? afterVerify(r) : `Committed before it stopped: ${count(r.windows, 'window')}, ${count(r.sessionsWritten, 'session')}, ${count(r.partitionsWritten, 'partition')}; the next run continues from there.` }));
      }
      return row;
    }),
  );
  if (!runs.length) $('runs').replaceChildren(el('p', { class: 'muted', text: 'No runs yet.' }));
}

// ---- charts -----------------------------------------------------------------------------------

function dayRange(days, to) {
  const end = to || new Date().toISOString().slice(0, 10);
  const start = new Date(Date.parse(`${end}T00:00:00Z`) - (days - 1) * 86400000).toISOString().slice(0, 10);
  return [start, end];
}

async function loadCharts(from, to) {
  const q = new URLSearchParams();
  if (from) q.set('from', from);
  if (to) q.set('to', to);
  const err = $('charts-error');
  try {
    const c = await api(`/api/charts?${q}`);
    err.hidden = true;
    $('range-from').value = c.from;
    $('range-to').value = c.to;
    state.chartTo = c.to;
    drawCharts(c);
  } catch (e) {
    if (e instanceof AccessError) return;
    err.hidden = false;
    err.textContent = e.message;
  }
}

const NO_DATASET =
  'This data directory stores DuckDB only (format duckdb): the charts, the calendar\'s day counts and the sessions list read the Parquet dataset, which only formats both and parquet write. `session-etl sessions` (with the same --data-dir) queries the DuckDB table.';

/** Days on the x axis as UTC dates (never the browser's M/D), with a comma for thousands on the y axis. */
const DAY_AXES = [
  // Whole days only: a date printed twice (at midnight and at noon) would say nothing.
  { space: 90, incrs: [86400, 2 * 86400, 7 * 86400, 14 * 86400, 28 * 86400, 91 * 86400, 365 * 86400], values: (_u, splits) => splits.map(dateOfEpoch) },
  { size: 56, values: (_u, splits) => splits.map((v) => fmt.format(v)) },
];

function drawCharts(c) {
  for (const p of state.plots) p.destroy();
  state.plots = [];
  const note = $('charts-note');
  // A store without the Parquet dataset: say why there are no charts, next to its stored sessions.
  const noDataset = state.format === 'duckdb';
  note.hidden = !noDataset;
  note.textContent = noDataset ? NO_DATASET : '';
  $('charts').hidden = noDataset;
  if (noDataset) return;
  // Every day of the range: a day not exported is a gap (null), never a line across it; a partial
  // day's bar is paler and its median left out (a few sessions say nothing of the day).
  const xs = c.perDay.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
  const whole = c.perDay.map((d) => (d.state === 'partial' ? null : d.sessions));
  const partial = c.perDay.map((d) => (d.state === 'partial' ? d.sessions : null));
  const median = c.perDay.map((d) => (d.state === 'partial' || d.medianDurationSeconds === null ? null : d.medianDurationSeconds / 60));
  const width = Math.max(280, Math.min(640, $('chart-per-day').clientWidth || 520));
  const bars = () => ({ paths: window.uPlot.paths.bars({ size: [0.7, 40] }), points: { show: false } });
  const opts = (series) => ({
    width,
    height: 200,
    legend: { show: false },
    tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    // Half a day either side, so that the first and last bars are drawn whole.
    scales: { x: { time: true, range: (_u, min, max) => [min - 43200, max + 43200] } },
    axes: DAY_AXES,
    series: [{}, ...series],
  });
  if (window.uPlot && xs.length) {
    state.plots.push(
      new window.uPlot(
        opts([
          { label: 'sessions', stroke: '#2f6f4f', fill: '#2f6f4f33', width: 2, ...bars() },
          { label: 'sessions (partial day)', stroke: '#a9cdb6', fill: '#a9cdb633', width: 2, ...bars() },
        ]),
        [xs, whole, partial],
        $('chart-per-day'),
      ),
    );
    state.plots.push(new window.uPlot(opts([{ label: 'median minutes', stroke: '#3b5ba5', width: 2 }]), [xs, median], $('chart-duration')));
    // The plots on their boxes, for a look from the browser's console (and the tests).
    $('chart-per-day').uplot = state.plots[0];
    $('chart-duration').uplot = state.plots[1];
  }
  hbars($('chart-types'), c.byType.map((t) => [t.type, t.sessions]));
  hbars($('chart-agents'), c.topAgents.map((a) => [a.agent, a.sessions]));
}

function hbars(box, rows) {
  const max = Math.max(1, ...rows.map((r) => r[1]));
  box.replaceChildren(
    ...rows.map(([label, n]) => {
      const fill = el('div', { class: 'bar-fill' });
      fill.style.width = `${(100 * n) / max}%`;
      return el('div', { class: 'hbar' }, el('span', { class: 'hbar-label', text: label, title: label }), el('div', { class: 'bar' }, fill), el('span', { class: 'hbar-n', text: fmt.format(n) }));
    }),
  );
  if (!rows.length) box.replaceChildren(el('p', { class: 'muted', text: 'No sessions in this range.' }));
}

// ---- sessions ---------------------------------------------------------------------------------

function queryParams(page) {
  const q = new URLSearchParams();
  for (const id of ['q-filter', 'q-sort', 'q-fields', 'q-from', 'q-to']) {
    const input = $(id);
    if (input.value.trim()) q.set(input.name, input.value.trim());
  }
  if (page !== undefined) {
    const size = Number($('q-size').value);
    q.set('pageSize', String(size));
    q.set('offset', String(page * size));
  }
  return q;
}

async function loadSessions(page) {
  const err = $('sessions-error');
  const q = queryParams(page);
  const seq = ++state.sessionsSeq;
  $('csv').href = withAccount(`/api/sessions.csv?${queryParams()}`);
  try {
    const r = await api(`/api/sessions?${q}`);
    if (seq !== state.sessionsSeq) return; // a later query was sent meanwhile: show that one
    err.hidden = true;
    state.page = page;
    state.total = r.total;
    drawTable(r);
  } catch (e) {
    if (seq !== state.sessionsSeq || e instanceof AccessError) return;
    err.hidden = false;
    err.textContent = e.message;
  }
}

function flat(v, prefix = '', out = {}) {
  for (const [k, val] of Object.entries(v)) {
    if (val && typeof val === 'object' && !Array.isArray(val)) flat(val, `${prefix}${k}.`, out);
    else out[prefix + k] = val;
  }
  return out;
}

const EPOCH_FIELDS = new Set(['started', 'ended']);

function drawTable(r) {
  const rows = r.items.map((i) => flat(i));
  const cols = r.columns || [...new Set(rows.flatMap((x) => Object.keys(x)))];
  const table = $('sessions-table');
  table.tHead.replaceChildren(el('tr', {}, ...cols.map((c) => el('th', { scope: 'col', text: c }))));
  table.tBodies[0].replaceChildren(
    ...rows.map((x) =>
      el(
        'tr',
        { dataTestid: 'session-row' },
        ...cols.map((c) => {
          const v = x[c];
          const text = v === null || v === undefined ? '' : EPOCH_FIELDS.has(c) && typeof v === 'number' ? iso(new Date(v * 1000).toISOString()) : String(v);
          return el('td', { text, title: text.length > 40 ? text : undefined });
        }),
      ),
    ),
  );
  const size = Number($('q-size').value);
  const pages = Math.max(1, Math.ceil(r.total / size));
  $('page-info').textContent = r.total
    ? `${fmt.format(r.offset + 1)}–${fmt.format(r.offset + r.items.length)} of ${count(r.total, 'session')} (page ${state.page + 1} of ${fmt.format(pages)})`
    : state.format === 'duckdb'
      ? NO_DATASET
      : 'no sessions match';
  $('prev').disabled = state.page === 0;
  $('next').disabled = r.offset + r.items.length >= r.total;
}

// ---- refresh ----------------------------------------------------------------------------------

async function refresh() {
  try {
    const [o, c] = await Promise.all([api('/api/overview'), api('/api/coverage')]);
    drawOverview(o);
    drawCoverage(c);
  } catch (e) {
    if (e instanceof AccessError) return;
    $('notice').hidden = false;
    $('notice').textContent = `Could not read the data directory: ${e.message}`;
  }
  clearTimeout(state.timer);
  state.timer = setTimeout(refresh, state.running ? 3000 : 15000);
}

async function start() {
  try {
    await signIn();
  } catch (e) {
    return accessLost(e.message);
  }
  if (!session()) {
    return accessLost('an access token is required: open the address the dashboard printed (Dashboard: http://…/?token=…); a new tab needs it again');
  }
  if (await showAllAccounts()) return;
  $('csv').addEventListener('click', downloadCsv);
  // Health and the calendar first; the heavier charts and the first page of sessions after them.
  refresh().then(() => {
    if (state.accessLost) return;
    loadCharts();
    loadSessions(0);
  });
  $('range').addEventListener('submit', (e) => {
    e.preventDefault();
    loadCharts($('range-from').value, $('range-to').value);
  });
  for (const b of document.querySelectorAll('#range button[data-days]')) {
    b.addEventListener('click', () => loadCharts(...dayRange(Number(b.dataset.days), state.chartTo)));
  }
  $('query').addEventListener('submit', (e) => {
    e.preventDefault();
    loadSessions(0);
  });
  $('q-size').addEventListener('change', () => loadSessions(0));
  $('prev').addEventListener('click', () => loadSessions(Math.max(0, state.page - 1)));
  $('next').addEventListener('click', () => loadSessions(state.page + 1));
}

// ---- all accounts -----------------------------------------------------------------------------
// A dashboard of several accounts (no --account): the page at / lists them, one row each, and
// /?account=NAME is that account's page, whose every request names the account.

/** The account this page shows (?account=NAME), or null. */
function pageAccount() {
  return new URLSearchParams(location.search).get('account');
}

/** An API path with the page's account added to its parameters (none: the path as it is). */
function withAccount(path) {
  const account = pageAccount();
  if (account === null) return path;
  const u = new URL(path, location.origin);
  u.searchParams.set('account', account);
  return `${u.pathname}${u.search}`;
}

/**
 * On one account's page, a link back to the list; at / of a dashboard of several accounts, the
 * list instead of one account's sections (true: drawn, nothing else to load).
 */
async function showAllAccounts() {
  if (pageAccount() !== null) {
    $('all-accounts').hidden = false;
    return false;
  }
  let r;
  try {
    r = await api('/api/accounts');
  } catch (e) {
    if (e instanceof AccessError) return true;
    // An older server (no such route) or a failure: the page of one data directory, as before.
    return false;
  }
  if (!r.accounts) return false;
  for (const s of document.querySelectorAll('main > section')) s.hidden = s.id !== 'accounts-section';
  $('accounts-section').hidden = false;
  document.title = `session-etl: ${count(r.accounts.length, 'account')}`;
  drawAccounts(r);
  const again = async () => {
    try {
      drawAccounts(await api('/api/accounts'));
    } catch (e) {
      $('accounts-error').hidden = false;
      // The session ended: what to do (accessLost's notice is in one account's sections, hidden here).
      if (e instanceof AccessError) return void ($('accounts-error').textContent = $('notice').textContent);
      $('accounts-error').textContent = `Could not read the data directory: ${e.message}`;
    }
    state.timer = setTimeout(again, 15000);
  };
  state.timer = setTimeout(again, 15000);
  return true;
}

function drawAccounts(r) {
  $('accounts-error').hidden = true;
  $('accounts-read-at').textContent = `read ${r.readAt.replace(/\.\d{3}Z$/, 'Z')}`;
  const lastRunText = (x) => {
    if (!x) return 'none yet';
    const when = x.endedAt || x.startedAt;
    const figures =
      x.sessionsNew === null || x.sessionsUpdated === null
        ? `${x.sessionsWritten === null ? 'unknown' : fmt.format(x.sessionsWritten)} sessions`
        : `${fmt.format(x.sessionsNew)} new, ${fmt.format(x.sessionsUpdated)} updated, ${x.sessionsUnchanged === null ? '?' : fmt.format(x.sessionsUnchanged)} unchanged`;
    return `${x.kind} ${x.outcome} ${iso(when)}: ${figures}`;
  };
  $('accounts-table').querySelector('tbody').replaceChildren(
    ...r.accounts.map((a) =>
      el(
        'tr',
        { 'data-testid': 'account-row', 'data-account': a.account },
        el('td', {}, el('a', { href: a.link, 'data-testid': 'account-link', text: a.account })),
        el('td', { class: 'num', 'data-testid': 'account-sessions', text: a.sessions === null ? '–' : fmt.format(a.sessions) }),
        el('td', { 'data-testid': 'account-last-run', text: lastRunText(a.lastRun) + (a.running ? ' (a run is going)' : '') }),
        el('td', { 'data-testid': 'account-checkpoint', text: a.checkpoint ? `${a.checkpoint} (${span(a.lagSeconds)} ago)` : 'nothing exported yet' }),
        el('td', { class: `health-${a.health.state}`, 'data-testid': 'account-health', 'data-state': a.health.state, title: a.health.reasons.join('\n'), text: a.health.state }),
      ),
    ),
  );
}

void start();
