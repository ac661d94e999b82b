// The dashboard page: fetches /api/… from the process that served it (nothing else) and draws it.
// Plain browser JavaScript, no build step; charts with uPlot (served from node_modules).
'use strict';

const $ = (id) => document.getElementById(id);
const fmt = new Intl.NumberFormat('en-US');
const state = { running: false, timer: null, sessionsSeq: 0, page: 0, total: 0, chartFrom: null, chartTo: null, plots: [] };

async function api(path) {
  const res = await fetch(path, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
  const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
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
function duration(ms) {
  if (ms === null || ms === undefined) return '–';
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${(s / 3600).toFixed(1)} h`;
}
function behind(seconds) {
  if (seconds === null) return '';
  if (seconds < 3600) return `${Math.max(0, Math.round(seconds / 60))} min`;
  if (seconds < 172800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} days`;
}

// ---- health, live run -------------------------------------------------------------------------

function drawOverview(o) {
  const h = $('health');
  h.dataset.state = o.health.state;
  $('health-word').textContent = o.health.state[0].toUpperCase() + o.health.state.slice(1);
  $('health-summary').textContent = o.health.summary;
  $('health-reasons').replaceChildren(...o.health.reasons.map((r) => el('li', { text: r })));
  $('checkpoint').textContent = o.checkpoint ? `${iso(o.checkpoint)} (${behind(o.lagSeconds)} behind now)` : 'none yet';
  $('total-sessions').textContent = o.totalSessions === null ? '–' : fmt.format(o.totalSessions);
  if (o.pendingRows) $('total-sessions').append(el('small', { text: ` +${fmt.format(o.pendingRows)} committed, merged by the next run` }));
  $('next-run').textContent = o.nextRun ? `${iso(o.nextRun.at)} (cron "${o.nextRun.cron}", ${o.nextRun.timezone}; if session-etl schedule is running)` : '–';
  const last = o.runs.find((r) => r.outcome !== 'running');
  $('last-run').textContent = last ? `${last.kind} ${last.outcome}, ${iso(last.endedAt || last.startedAt)}` : 'none yet';
  $('as-of').textContent = o.asOf ? `as of ${iso(o.asOf)}` : '';
  const notice = $('notice');
  notice.hidden = !o.notice;
  notice.textContent = o.notice || '';

  const live = $('live-run');
  live.hidden = !o.running;
  state.running = Boolean(o.running);
  if (o.running) {
    const r = o.running;
    const parts = [`${r.command}, pid ${r.pid}, started ${iso(r.startedAt)}`];
    if (r.windowsTotal !== null) parts.push(`${fmt.format(r.windowsDone)} of ${fmt.format(r.windowsTotal)} windows`);
    if (r.sessions !== null) parts.push(`${fmt.format(r.sessions)} sessions so far`);
    if (r.eta) parts.push(`ETA ${iso(r.eta)}`);
    if (r.progressAt) parts.push(`(as of ${iso(r.progressAt)})`);
    $('live-text').textContent = parts.join(' · ');
    live.dataset.windowsDone = r.windowsDone ?? '';
    live.dataset.windowsTotal = r.windowsTotal ?? '';
    $('live-bar').style.width = r.windowsTotal ? `${(100 * r.windowsDone) / r.windowsTotal}%` : '0%';
  }
  $('refresh-note').textContent = state.running ? 'refreshing every 3 s while the run goes' : '';
  drawRuns(o.runs);
}

// ---- coverage calendar ------------------------------------------------------------------------

function drawCoverage(c) {
  const cal = $('calendar');
  const max = Math.max(1, ...c.days.map((d) => d.sessions));
  const cells = [];
  if (c.days.length) {
    // Weeks as columns, Monday first, like a wall calendar turned sideways.
    const firstDow = (new Date(`${c.days[0].date}T00:00:00Z`).getUTCDay() + 6) % 7;
    for (let i = 0; i < firstDow; i++) cells.push(el('span', { class: 'day pad' }));
  }
  for (const d of c.days) {
    const level = d.sessions === 0 ? 0 : Math.min(4, 1 + Math.floor((4 * d.sessions) / (max + 1)));
    const anomaly = d.anomaly ? `\nvolume anomaly: ${fmt.format(d.anomaly.sessions)} sessions, expected about ${fmt.format(d.anomaly.expected)}` : '';
    const title = `${d.date}: ${d.state}, ${fmt.format(d.sessions)} sessions${anomaly}${d.command ? `\nfill it: ${d.command}` : ''}`;
    const cell = el('button', { type: 'button', class: `day ${d.state} l${level}${d.anomaly ? ' anomaly' : ''}`, dataTestid: 'coverage-day', dataDate: d.date, dataState: d.state, title, 'aria-label': title });
    if (d.anomaly) cell.dataset.anomaly = `${d.anomaly.sessions}/${d.anomaly.expected}`;
    cell.addEventListener('click', () => showDay(d));
    cells.push(cell);
  }
  cal.replaceChildren(...cells);
  if (!c.days.length) cal.replaceChildren(el('p', { class: 'muted', text: 'Nothing covered yet.' }));
  $('gaps').replaceChildren(
    ...c.gaps.map((g) =>
      el('li', {}, el('span', { text: `${g.kind === 'hole' ? 'Hole' : 'Not exported yet'} ${iso(g.from)} – ${iso(g.to)}: ` }), el('code', { dataTestid: 'hole-command', text: g.command })),
    ),
  );
}

function showDay(d) {
  const p = $('day-detail');
  p.replaceChildren(el('strong', { text: d.date }), ` ${d.state}, ${fmt.format(d.sessions)} sessions stored. `);
  if (d.command) p.append('Fill it with ', el('code', { dataTestid: 'day-command', text: d.command }));
  if (d.anomaly) {
    p.append(
      el('span', { dataTestid: 'day-anomaly', text: `Volume anomaly: ${fmt.format(d.anomaly.sessions)} sessions, expected about ${fmt.format(d.anomaly.expected)} (its weekday's median). Compare it with the source: ` }),
      el('code', { dataTestid: 'anomaly-command', text: d.anomaly.command }),
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

function drawRuns(runs) {
  drawTimeline(runs);
  const longest = Math.max(1, ...runs.map((r) => r.durationMs || 0));
  $('runs').replaceChildren(
    ...(runs.length ? runs : []).map((r) => {
      const range = r.rangeFrom ? `${iso(r.rangeFrom)} – ${iso(r.rangeTo)}` : '';
      const bar = el('div', { class: 'bar small' }, el('div', { class: `bar-fill ${r.outcome}` }));
      bar.firstChild.style.width = `${Math.max(1, (100 * (r.durationMs || 0)) / longest)}%`;
      const figures = [
        `${fmt.format(r.sessionsWritten)} sessions (${r.sessionsNew ?? '?'} new, ${r.sessionsUpdated ?? '?'} updated)`,
        `${fmt.format(r.requests)} requests`,
        `${r.retries} retries`,
        `${r.rateLimited} 429s`,
        `paused ${duration(r.pausedMs || 0)}`,
      ].join(' · ');
      const row = el(
        'article',
        { class: `run ${r.outcome}`, dataTestid: 'run', dataStatus: r.outcome, dataRunId: r.runId },
        el('div', { class: 'run-head' }, el('span', { class: `badge ${r.outcome}`, text: r.outcome }), el('strong', { text: ` ${r.kind} ` }), el('span', { class: 'muted', text: range })),
        el('div', { class: 'muted', text: `started ${iso(r.startedAt)} · ${r.outcome === 'running' ? 'going' : `took ${duration(r.durationMs)}`} · ${r.runId}` }),
        bar,
        el('div', { text: figures }),
      );
      if (r.error) {
        row.append(el('div', { class: 'error', text: `Error: ${r.error}` }));
        row.append(el('div', { class: 'muted', text: `Committed before it stopped: ${r.windows} windows, ${fmt.format(r.sessionsWritten)} sessions, ${r.partitionsWritten} partitions; the next run continues from there.` }));
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
    err.hidden = false;
    err.textContent = e.message;
  }
}

function drawCharts(c) {
  for (const p of state.plots) p.destroy();
  state.plots = [];
  const xs = c.perDay.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
  const width = Math.max(280, Math.min(640, $("chart-per-day").clientWidth || 520));
  const opts = (label, color, bars) => ({
    width,
    height: 200,
    legend: { show: false },
    scales: { x: { time: true } },
    axes: [{}, { size: 56 }],
    series: [{}, { label, stroke: color, fill: `${color}33`, width: 2, ...(bars ? { paths: window.uPlot.paths.bars({ size: [0.7, 40] }), points: { show: false } } : {}) }],
  });
  if (window.uPlot) {
    state.plots.push(new window.uPlot(opts('sessions', '#2f6f4f', true), [xs, c.perDay.map((d) => d.sessions)], $('chart-per-day')));
    state.plots.push(
      new window.uPlot(opts('median minutes', '#3b5ba5', false), [xs, c.perDay.map((d) => (d.medianDurationSeconds === null ? null : d.medianDurationSeconds / 60))], $('chart-duration')),
    );
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
  $('csv').href = `/api/sessions.csv?${queryParams()}`;
  try {
    const r = await api(`/api/sessions?${q}`);
    if (seq !== state.sessionsSeq) return; // a later query was sent meanwhile: show that one
    err.hidden = true;
    state.page = page;
    state.total = r.total;
    drawTable(r);
  } catch (e) {
    if (seq !== state.sessionsSeq) return;
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
    ? `${fmt.format(r.offset + 1)}–${fmt.format(r.offset + r.items.length)} of ${fmt.format(r.total)} sessions (page ${state.page + 1} of ${fmt.format(pages)})`
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
    $('notice').hidden = false;
    $('notice').textContent = `Could not read the data directory: ${e.message}`;
  }
  clearTimeout(state.timer);
  state.timer = setTimeout(refresh, state.running ? 3000 : 15000);
}

function start() {
  // Health and the calendar first; the heavier charts and the first page of sessions after them.
  refresh().then(() => {
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

start();
