// The Reconciliation page (issue 45): the latest runs, a run's drift by command type and source,
// and its items, each linked to its command's trace.
import { $, el, fmtTime, showText } from './dom.js';
import { api } from './session.js';
import { traceLink } from './trace.js';

const VERDICTS = [
  'confirmed',
  'missing',
  'unexpected',
  'ambiguous',
  'settled_applied',
  'settled_absent',
  'unknown',
];

function counts(run) {
  return VERDICTS.filter((v) => (run.counts[v] ?? 0) > 0)
    .map((v) => `${v} ${run.counts[v]}`)
    .join(' · ');
}

function runRow(run) {
  const open = el('button', { type: 'button', class: 'link' }, `#${run.id}`);
  open.addEventListener('click', () => void showRun(run.id));
  return el(
    'tr',
    {},
    el('td', {}, open),
    el('td', { class: 'mono' }, fmtTime(run.startedAt)),
    el('td', {}, run.trigger),
    el('td', { class: 'mono' }, `${fmtTime(run.since)} – ${fmtTime(run.until)}`),
    el('td', {}, [run.source, run.commandType].filter(Boolean).join(' · ') || 'all'),
    el('td', {}, run.state === 'failed' ? `failed: ${showText(run.error ?? '')}` : counts(run) || 'nothing'),
    el('td', {}, String(run.requests)),
  );
}

function itemRow(item) {
  const command = item.commandId
    ? el('button', { type: 'button', class: 'link mono' }, showText(item.commandId))
    : el('span', { class: 'muted' }, 'no command');
  if (item.commandId) command.addEventListener('click', () => traceLink(item.commandId));
  return el(
    'tr',
    { class: `verdict-${item.verdict}` },
    el('td', {}, item.verdict),
    el('td', {}, item.commandType),
    el('td', {}, item.source ?? '–'),
    el('td', {}, command),
    el('td', { class: 'mono' }, showText(item.targetId)),
    el('td', { title: JSON.stringify(item.evidence, null, 2) }, item.reason),
  );
}

async function showRun(id) {
  const { run, drift, items } = await api(`reconciliation/runs/${id}`);
  $('reconcile-run-title').textContent = `Run #${run.id}: ${counts(run) || 'nothing to reconcile'}`;
  $('reconcile-drift').replaceChildren(
    ...(drift.length === 0
      ? [el('li', {}, 'No drift: every item confirmed or settled.')]
      : drift.map((d) =>
          el('li', {}, `${d.commandType} · ${d.source ?? 'no source'} · ${d.verdict}: ${d.count}`),
        )),
  );
  $('reconcile-items')
    .querySelector('tbody')
    .replaceChildren(...items.map(itemRow));
  // A run with no items has no table to head (the drift line says so).
  $('reconcile-items').hidden = items.length === 0;
  $('reconcile-run').hidden = false;
}

/** The latest runs, and one run's items: `#reconciliation/<id>`'s, else the latest's. */
export async function loadReconciliation(part) {
  const { items } = await api('reconciliation/runs?limit=50');
  $('reconcile-runs')
    .querySelector('tbody')
    .replaceChildren(...items.map(runRow));
  $('reconcile-run').hidden = true;
  const wanted = Number(part);
  if (Number.isInteger(wanted) && wanted > 0) await showRun(wanted);
  else if (items[0]) await showRun(items[0].id);
}
