/* global window, document */
// Outcome callbacks on the overview: each PMS source's endpoint (closed, probing, paused,
// disabled by a 410) and queue, and the dead deliveries with their redelivery, one or all
// (GET /ops/api/callbacks, POST /ops/api/callbacks/redeliver). Refreshed with the overview.
import { $, el, table } from './dom.js';
import { api, isRefused, signOut } from './session.js';

const CALLBACK_REFRESH_MS = 10000;
const ENDPOINT_TEXT = {
  closed: 'healthy',
  half_open: 'probing (breaker half-open)',
  open: 'paused (breaker open)',
  disabled: 'disabled (410 Gone)',
};
let callbacksTimer = null;

function callbacksCard() {
  let card = $('callbacks');
  if (card) return card;
  card = el('div', { class: 'card', id: 'callbacks', 'data-testid': 'callbacks' });
  $('overview').append(card);
  return card;
}

async function redeliver(body) {
  let message;
  try {
    const { redelivered } = await api('callbacks/redeliver', { method: 'POST', body });
    message = `redelivering ${redelivered.length} callback(s)`;
  } catch (error) {
    message = error.message;
  }
  // The card is drawn anew by the reload: the result goes into the new one, or it is lost.
  await loadCallbacks();
  const out = $('callbacks-result');
  if (out) out.textContent = message;
}

function sourcesTable(sources) {
  const rows = sources.map((s) =>
    el(
      'tr',
      { 'data-source': s.source, class: s.endpoint === 'closed' ? '' : 'attention' },
      el('td', { class: 'mono' }, s.source),
      el('td', {}, ENDPOINT_TEXT[s.endpoint] ?? s.endpoint),
      el('td', {}, String(s.pending)),
      el('td', {}, s.pending ? `${s.oldest_pending_seconds} s` : '-'),
      el('td', {}, String(s.dead)),
      el('td', {}, String(s.delivered)),
      el(
        'td',
        {},
        s.dead
          ? el(
              'button',
              {
                type: 'button',
                'data-needs': 'operator',
                onclick: () => redeliver({ all: true, source: s.source }),
              },
              `Redeliver all ${s.dead} dead`,
            )
          : '',
      ),
    ),
  );
  const columns = ['source', 'endpoint', 'pending', 'oldest pending', 'dead', 'delivered (24 h)', ''];
  return table({ class: 'kv' }, columns, rows);
}

function deadTable(dead) {
  if (!dead.length) return el('p', { class: 'muted small' }, 'No dead callbacks.');
  const rows = dead.map((d) =>
    el(
      'tr',
      { 'data-delivery': d.id },
      el('td', { class: 'mono' }, d.id),
      el('td', { class: 'mono' }, d.source),
      el('td', { class: 'mono' }, `${d.commandType} ${JSON.stringify(d.commandId)}`),
      el('td', {}, d.outcomeStatus),
      el('td', {}, String(d.attempts)),
      el('td', { class: 'small' }, d.lastError ?? ''),
      el(
        'td',
        {},
        el(
          'button',
          { type: 'button', 'data-needs': 'operator', onclick: () => redeliver({ ids: [d.id] }) },
          'Redeliver',
        ),
      ),
    ),
  );
  return table({}, null, rows);
}

async function loadCallbacks() {
  const card = callbacksCard();
  try {
    const { sources, dead } = await api('callbacks?limit=50');
    if (!sources.length) {
      card.replaceChildren(
        el('h2', {}, 'Outcome callbacks'),
        el('p', { class: 'muted small' }, 'No PMS source has callbacks (PMS_CALLBACKS).'),
      );
      return;
    }
    card.replaceChildren(
      el('h2', {}, 'Outcome callbacks'),
      sourcesTable(sources),
      el('h3', {}, 'Dead callbacks (retries ran out)'),
      deadTable(dead),
      el('p', { class: 'muted small', id: 'callbacks-result', role: 'status' }),
    );
  } catch (error) {
    if (isRefused(error)) return signOut();
    card.replaceChildren(el('h2', {}, 'Outcome callbacks'), el('p', { class: 'error' }, error.message));
  }
}

/** Shown and refreshed with the overview (overview.js starts and stops it). */
export function startCallbacks() {
  stopCallbacks();
  void loadCallbacks();
  callbacksTimer = window.setInterval(() => {
    if (!document.hidden) void loadCallbacks();
  }, CALLBACK_REFRESH_MS);
}

export function stopCallbacks() {
  if (callbacksTimer) window.clearInterval(callbacksTimer);
  callbacksTimer = null;
}
