/* global window, document */
// "Data and retention" on the overview: each table's size (rows counted, or estimated for a large one,
// table and index bytes), its retention and when the pruner last deleted from it
// (GET /ops/api/storage; docs/retention.md). Refreshed every minute: sizes move slowly.
import { $, el, table } from './dom.js';
import { api, isRefused, signOut } from './session.js';

const STORAGE_REFRESH_MS = 60000;
let storageTimer = null;

function storageCard() {
  let card = $('storage');
  if (card) return card;
  card = el('div', { class: 'card', id: 'storage', 'data-testid': 'storage' });
  $('overview').append(card);
  return card;
}

function bytes(n) {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

function when(iso) {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : 'never';
}

function tableRow(t) {
  return el(
    'tr',
    { 'data-table': t.table, class: t.behind ? 'attention' : '' },
    el('td', { class: 'mono' }, t.table),
    el('td', {}, t.retention),
    // Small tables are counted; only a large one's figure is the planner's estimate ("about").
    el(
      'td',
      { class: 'count', 'data-testid': `rows-${t.table}` },
      t.rows == null ? 'not estimated yet' : `${t.rowsExact ? '' : 'about '}${t.rows.toLocaleString('en')}`,
    ),
    el('td', {}, bytes(t.tableBytes)),
    el('td', {}, bytes(t.indexBytes)),
    el('td', { 'data-testid': `pruned-${t.table}` }, t.pruned ? when(t.lastPrunedAt) : 'by its owner'),
    el('td', {}, t.behind ? 'behind: rows past the retention wait for the next pass' : ''),
  );
}

async function loadStorage() {
  const card = storageCard();
  try {
    const { tables, totalBytes } = await api('storage');
    const columns = ['table', 'retention', 'rows', 'table', 'indexes', 'last pruned', ''];
    card.replaceChildren(
      el('h2', {}, 'Data and retention'),
      el(
        'p',
        { class: 'muted small' },
        `${bytes(totalBytes)} in all. What each table keeps: docs/retention.md.`,
      ),
      table({ class: 'kv' }, columns, tables.map(tableRow)),
    );
  } catch (error) {
    if (isRefused(error)) return signOut();
    card.replaceChildren(el('h2', {}, 'Data and retention'), el('p', { class: 'error' }, error.message));
  }
}

/** Shown with the overview (overview.js starts and stops it). */
export function startStorage() {
  stopStorage();
  void loadStorage();
  storageTimer = window.setInterval(() => {
    if (!document.hidden) void loadStorage();
  }, STORAGE_REFRESH_MS);
}

export function stopStorage() {
  if (storageTimer) window.clearInterval(storageTimer);
  storageTimer = null;
}
