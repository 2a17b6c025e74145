/* global window, document */
// The overview: the flow as stages, their figures and last-hour charts (uPlot, served from
// node_modules by the receiver). Data from GET /ops/api/overview, refreshed every 10 s while shown.
import uPlot from './vendor/uplot/uPlot.esm.js';
import { $, el } from './dom.js';
import { api, isRefused, signOut } from './session.js';
import { startCallbacks, stopCallbacks } from './callbacks.js';
import { startStorage, stopStorage } from './storage.js';
import { renderAttention, renderBand, scrollToPart } from './attention.js';

const REFRESH_MS = 10000;
const STAGES = ['receiver', 'outbox', 'relay', 'kafka', 'consumers', 'partner', 'poller', 'dead-letters'];
/** A legend lists this many series; the rest fold under "N more" (the card stays its content's size). */
const LEGEND_SHOWN = 6;
const COLORS = ['#2459d1', '#1f8a4c', '#c23a3a', '#b7791f', '#7b4bc4', '#14858f', '#8a5a2b', '#d14a8b'];
const STATUS_TEXT = {
  moving: 'moving',
  idle: 'idle',
  attention: 'needs attention',
  stalled: 'not moving',
  stopped: 'not running',
};
let overviewTimer = null;
let charts = [];

/**
 * What the legend says of a series: a count chart its total over the hour (a chart with a unit,
 * its maximum); a level chart (`kind: 'level'`, how things stood at the end of each minute, null
 * where nothing is known) its value now and its maximum.
 */
function legendValue(chart, values) {
  const unit = chart.unit ? ` ${chart.unit}` : '';
  const known = values.filter((v) => v != null);
  const max = known.reduce((a, b) => Math.max(a, b), 0);
  if (chart.kind === 'level') {
    const now = values[values.length - 1];
    return `now ${now == null ? '–' : `${now}${unit}`} · max ${max}${unit}`;
  }
  return chart.unit ? `max ${max}${unit}` : known.reduce((a, b) => a + b, 0);
}

/** A count chart with nothing counted, or a level chart with nothing known, draws no plot. */
function hasData(chart) {
  const values = chart.series.flatMap((s) => s.values);
  return chart.kind === 'level' ? values.some((v) => v != null) : values.some((v) => v);
}

function chartNode(chart, minutes) {
  const box = el(
    'div',
    { class: 'chart', 'data-kind': chart.kind ?? 'count' },
    el('div', { class: 'chart-title' }, chart.title),
  );
  if (!hasData(chart)) {
    box.append(el('div', { class: 'chart-empty muted' }, 'nothing in the last hour'));
    return box;
  }
  const plot = el('div', { class: 'chart-plot' });
  box.append(plot);
  const legend = el('div', { class: 'chart-legend' });
  const items = chart.series.map((s, i) =>
    el(
      'span',
      { class: 'legend-item' },
      el('i', { class: `swatch c${i % COLORS.length}` }),
      ...breakable(s.name, '._/'),
      ' ',
      el('b', {}, legendValue(chart, s.values)),
    ),
  );
  legend.append(...items.slice(0, LEGEND_SHOWN));
  if (items.length > LEGEND_SHOWN) {
    legend.append(
      el(
        'details',
        { class: 'legend-more' },
        el('summary', {}, `${items.length - LEGEND_SHOWN} more`),
        ...items.slice(LEGEND_SHOWN),
      ),
    );
  }
  box.append(legend);
  // Drawn once the box is in the page, so uPlot knows its width.
  window.requestAnimationFrame(() => {
    // As wide as its card, however narrow: a fixed minimum would push the card past the window.
    const width = Math.max(100, plot.clientWidth || 240);
    const u = new uPlot(
      {
        width,
        height: 90,
        legend: { show: false },
        cursor: { show: true, points: { show: false } },
        scales: { x: { time: true } },
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        axes: [
          {
            size: 20,
            font: '10px system-ui',
            gap: 2,
            ticks: { size: 3 },
            grid: { show: false },
            // UTC hours and minutes, like every time in the console.
            values: (_u, ticks) => ticks.map((t) => new Date(t * 1000).toISOString().slice(11, 16)),
          },
          { size: 34, font: '10px system-ui', gap: 2, ticks: { size: 3 }, grid: { stroke: '#eef0f4' } },
        ],
        series: [
          {},
          ...chart.series.map((s, i) => ({
            label: s.name,
            stroke: COLORS[i % COLORS.length],
            width: 1.5,
            points: { show: false },
          })),
        ],
      },
      [minutes, ...chart.series.map((s) => s.values)],
      plot,
    );
    charts.push(u);
  });
  return box;
}

/** `text` as parts a line may also break between, after each of `after` (a topic's or a path's name). */
function breakable(text, after) {
  const parts = String(text).split(new RegExp(`(?<=[${after}])`));
  return parts.flatMap((part, i) => (i > 0 ? [el('wbr', {}), part] : [part]));
}

/** A label that may also wrap after a dot (`commands.rental-payments`), as at spaces and hyphens. */
function labelNode(label) {
  return el('dt', {}, ...breakable(label, '.'));
}

/** A figure's value; a count is never broken inside its digits (`379` / `3`). */
function valueNode(value) {
  const count = /^-?[\d.,]+$/.test(String(value));
  return el('dd', { class: count ? 'mono count' : 'mono' }, value);
}

function stageNode(stage, minutes) {
  const figures = el('dl', { class: 'figures' });
  for (const f of stage.figures) figures.append(labelNode(f.label), valueNode(f.value));
  return el(
    'div',
    { class: `card stage ${stage.status}`, 'data-stage': stage.id, 'data-status': stage.status },
    el(
      'div',
      { class: 'stage-head' },
      el('h2', {}, stage.title),
      el(
        'span',
        { class: `status ${stage.status}`, 'data-testid': `status-${stage.id}` },
        STATUS_TEXT[stage.status],
      ),
    ),
    el('p', { class: 'stage-note' }, stage.note),
    figures,
    ...stage.charts.map((c) => chartNode(c, minutes)),
  );
}

async function loadOverview() {
  try {
    const data = await api('overview');
    for (const u of charts) u.destroy();
    charts = [];
    const byId = Object.fromEntries(data.stages.map((s) => [s.id, s]));
    renderAttention(data.attention ?? []);
    renderBand(data.stages);
    $('pipeline').replaceChildren(
      ...STAGES.filter((id) => byId[id]).map((id) => stageNode(byId[id], data.minutes)),
    );
    $('overview-meta').textContent =
      `refreshed ${data.generatedAt.slice(11, 19)} UTC · every ${REFRESH_MS / 1000} s · ${data.cost.queries} queries, ${data.cost.ms} ms`;
    $('overview-rules').textContent =
      `Not moving: relay when the oldest unpublished outbox row waits over ${data.rules.relayStallSeconds} s; consumers when a command sits pending or in flight over ${data.rules.commandStuckSeconds / 60} min; poller when a resource's pass under way has had no page for ${data.rules.pollerStaleSeconds / 60} min, or, with none under way, its last pass failed or its last success is over ${data.rules.pollerStaleSeconds / 60} min old. Not running: no process running the role has reported for ${data.rules.roleGoneSeconds} s. Figures marked "this process" come from this receiver's /metrics; the rest from PostgreSQL, for every process.`;
    $('overview-error').textContent = '';
  } catch (error) {
    if (isRefused(error)) return signOut();
    $('overview-error').textContent = `Cannot load the overview: ${error.message}`;
  }
}

/** Shows the overview now and every REFRESH_MS while the page is visible; `part`: a card to show. */
export async function startOverview(part) {
  if (overviewTimer) {
    scrollToPart(part);
    return;
  }
  stopOverview();
  // The outcome callbacks' card (callbacks.js) is part of the overview.
  startCallbacks();
  // Each table's size and last pruning (storage.js), below the callbacks.
  startStorage();
  await loadOverview();
  scrollToPart(part);
  overviewTimer = window.setInterval(() => {
    if (!document.hidden) void loadOverview();
  }, REFRESH_MS);
}

export function stopOverview() {
  stopCallbacks();
  stopStorage();
  if (overviewTimer) window.clearInterval(overviewTimer);
  overviewTimer = null;
}
