/* global document, window, sessionStorage, fetch, URLSearchParams */
// The ops console: vanilla JS, no build step. Everything it shows comes from /ops/api (bearer
// OPS_TOKEN kept in sessionStorage). Text from letters is always set with textContent, never HTML.
'use strict';

const TOKEN_KEY = 'rentbridge.ops.token';
const ACTOR_KEY = 'rentbridge.ops.actor';
const $ = (id) => document.getElementById(id);
let selectedId = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child == null) continue;
    node.append(child instanceof window.Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function fmtTime(iso) {
  if (!iso) return '–';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function shortTime(iso) {
  return iso ? iso.slice(0, 16).replace('T', ' ') : '–';
}

/**
 * Ids are the PMS's own text (any characters but controls): invisible and direction-changing
 * characters, quotes and backslashes are shown escaped, so an id reads as what it is.
 */
function showText(text) {
  return String(text).replace(
    // eslint-disable-next-line no-control-regex -- control characters are exactly what must be shown escaped
    /[\u0000-\u001f\u007f-\u009f"\\\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g,
    (c) => (c === '"' ? '\\"' : c === '\\' ? '\\\\' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  );
}

/** A cell that keeps one line: long ids are cut with an ellipsis, the full text is in the tooltip. */
function cut(text, cls = 'mono') {
  const value = text == null || text === '' ? '–' : showText(text);
  return el('td', { class: `${cls} cut`, title: value }, value);
}

/** The whole topic, allowed to wrap after its dots (a topic is never cut). */
function topicCell(topic) {
  const td = el('td', { class: 'mono topic', title: topic || '' });
  const parts = String(topic || '–').split('.');
  parts.forEach((part, i) => {
    td.append(document.createTextNode(i < parts.length - 1 ? `${part}.` : part));
    if (i < parts.length - 1) td.append(el('wbr'));
  });
  return td;
}

function pretty(value) {
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}

async function api(path, options = {}) {
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) || ''}` };
  const actor = sessionStorage.getItem(ACTOR_KEY);
  if (actor) headers['X-Ops-Actor'] = actor;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`api/${path}`, {
    method: options.method || 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const error = new Error(body.error ? body.error.message : `HTTP ${res.status}`);
    error.status = res.status;
    throw error;
  }
  return body;
}

// ---- session ------------------------------------------------------------------------------

const TABS = ['overview', 'trace', 'letters', 'audit'];

function showApp(signedIn) {
  $('login').hidden = signedIn;
  $('tabs').hidden = !signedIn;
  $('session').hidden = !signedIn;
  $('trace-form').hidden = !signedIn;
  for (const tab of TABS) $(tab).hidden = true;
  if (!signedIn) window.stopOverview?.();
  if (signedIn) $('whoami').textContent = `signed in as ${sessionStorage.getItem(ACTOR_KEY) || 'ops-api'}`;
}

async function login(event) {
  event.preventDefault();
  $('login-error').textContent = '';
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  sessionStorage.setItem(ACTOR_KEY, $('actor').value.trim());
  try {
    await api('dead-letters?limit=1');
    $('token').value = '';
    showApp(true);
    route();
  } catch (error) {
    sessionStorage.removeItem(TOKEN_KEY);
    $('login-error').textContent =
      error.status === 403 ? 'That token is not valid.' : `Cannot sign in: ${error.message}`;
  }
}

function logout() {
  sessionStorage.removeItem(TOKEN_KEY);
  showApp(false);
}

// The URL's hash names the view (#overview, #trace/<id>, #letters, #audit): links and reloads
// keep it. The overview is the landing page.
function switchTab(tab) {
  const hash =
    tab === 'trace' && window.currentTraceId
      ? `#trace/${encodeURIComponent(window.currentTraceId)}`
      : `#${tab}`;
  if (window.location.hash !== hash) window.location.hash = hash;
  else route();
}

function route() {
  if (!sessionStorage.getItem(TOKEN_KEY)) return;
  const [name, ...rest] = window.location.hash.replace(/^#/, '').split('/');
  const tab = TABS.includes(name) ? name : 'overview';
  for (const b of document.querySelectorAll('.tab')) b.classList.toggle('active', b.dataset.tab === tab);
  for (const t of TABS) $(t).hidden = t !== tab;
  if (tab !== 'overview') window.stopOverview?.();
  if (tab === 'overview') void window.startOverview?.();
  else if (tab === 'trace') void window.showTrace?.(rest.length ? decodeURIComponent(rest.join('/')) : '');
  else if (tab === 'audit') void loadAudit();
  else void loadLetters();
}

/** Opens the trace view for an id (the search box, a letter's "Trace this event", an id in a trace). */
function traceLink(id) {
  window.location.hash = `#trace/${encodeURIComponent(id)}`;
}

// ---- list ---------------------------------------------------------------------------------

function filterQuery() {
  const params = new URLSearchParams();
  for (const [k, v] of new window.FormData($('filters')).entries()) {
    if (String(v).trim()) params.set(k, String(v).trim());
  }
  params.set('limit', '200');
  return params.toString();
}

function renderCounts(counts) {
  const box = $('counts');
  box.replaceChildren(
    el('span', { class: 'chip total', 'data-testid': 'count-total' }, `${counts.total} letters`),
  );
  const group = (label, entries, field) => {
    if (entries.length === 0) return;
    box.append(el('span', { class: 'label' }, label));
    for (const [name, n] of entries.sort((a, b) => b[1] - a[1])) {
      box.append(
        el(
          'button',
          {
            type: 'button',
            class: 'chip',
            title: `filter by ${field}`,
            onclick: () => {
              const input = $(field === 'reason' ? 'f-reason' : 'f-code');
              input.value = name === '(none)' ? '' : name;
              void loadLetters();
            },
          },
          name,
          el('b', {}, n),
        ),
      );
    }
  };
  group('by reason', Object.entries(counts.byReason), 'reason');
  group('by code', Object.entries(counts.byCode), 'code');
}

function logicalTopic(letter) {
  return letter.originalTopic || letter.dlqTopic;
}

async function loadLetters() {
  $('list-error').textContent = '';
  try {
    const { items, counts } = await api(`dead-letters?${filterQuery()}`);
    renderCounts(counts);
    const rows = items.map((l) =>
      el(
        'tr',
        {
          'data-id': l.id,
          class: l.id === selectedId ? 'selected' : '',
          onclick: () => void openLetter(l.id),
        },
        el('td', { class: 'mono' }, l.id),
        el('td', {}, el('span', { class: `badge ${l.state}` }, l.state)),
        el('td', {}, l.reason || '–'),
        cut(l.errorCode),
        topicCell(logicalTopic(l)),
        cut(l.key),
        cut(l.commandSource),
        cut(l.commandId),
        el('td', { class: 'mono', title: l.lastFailureAt || '' }, shortTime(l.lastFailureAt)),
      ),
    );
    $('letters-table')
      .querySelector('tbody')
      .replaceChildren(...rows);
    $('empty').hidden = items.length > 0;
  } catch (error) {
    if (error.status === 401 || error.status === 403) return logout();
    $('list-error').textContent = error.message;
  }
}

// ---- detail -------------------------------------------------------------------------------

function summaryRow(label, value) {
  return [el('dt', {}, label), el('dd', { class: 'mono' }, value == null || value === '' ? '–' : value)];
}

function renderGuard(guard) {
  const box = $('guard');
  if (!guard) {
    box.replaceChildren(
      el('p', { class: 'muted' }, 'No guard row for this command (never tried, or reset by a redrive).'),
    );
    return;
  }
  const rows = guard.history.map((a) =>
    el(
      'tr',
      {},
      el('td', {}, `#${a.attempt}`),
      el('td', {}, a.kind),
      el('td', { class: 'mono' }, fmtTime(a.startedAt)),
      el('td', {}, [a.result, a.status, a.code].filter(Boolean).join(' ') || '–'),
      el('td', { class: 'mono' }, a.requestId),
    ),
  );
  box.replaceChildren(
    el(
      'p',
      {},
      el('span', { class: 'badge', 'data-testid': 'guard-state' }, guard.state),
      ` ${guard.attempts} attempt(s), updated ${fmtTime(guard.updatedAt)}`,
    ),
    rows.length
      ? el(
          'table',
          { class: 'kv' },
          el(
            'thead',
            {},
            el('tr', {}, ...['#', 'kind', 'started', 'result', 'request id'].map((h) => el('th', {}, h))),
          ),
          el('tbody', {}, ...rows),
        )
      : el('p', { class: 'muted' }, 'No attempts recorded.'),
  );
}

async function openLetter(id) {
  selectedId = id;
  for (const tr of $('letters-table').querySelectorAll('tbody tr')) {
    tr.classList.toggle('selected', Number(tr.dataset.id) === id);
  }
  const { letter, guard, audit } = await api(`dead-letters/${id}`);
  $('detail').hidden = false;
  $('detail-title').textContent = `Dead letter #${letter.id}`;
  const state = $('detail-state');
  state.textContent = letter.state;
  state.className = `badge ${letter.state}`;
  $('detail-summary').replaceChildren(
    ...summaryRow(
      'Reason',
      [letter.reason, letter.errorCode, letter.errorStatus].filter(Boolean).join(' · '),
    ),
    ...summaryRow('Error', letter.errorMessage),
    ...summaryRow(
      'Original',
      `${letter.originalTopic || '–'} [${letter.originalPartition ?? '–'}] @ ${letter.originalOffset ?? '–'}`,
    ),
    ...summaryRow('Key', letter.key),
    ...summaryRow(
      'Command',
      letter.commandId == null
        ? null
        : `"${showText(letter.commandId)}" · ${letter.commandType || '–'} · from ${letter.commandSource == null ? '–' : `"${showText(letter.commandSource)}"`}`,
    ),
    ...summaryRow('Attempts', letter.attempts),
    ...summaryRow('Failures', `${fmtTime(letter.firstFailureAt)} → ${fmtTime(letter.lastFailureAt)}`),
    ...summaryRow('Request ids', letter.partnerRequestIds.join(', ')),
    ...summaryRow('Consumer', letter.consumerGroup),
    ...summaryRow('Resolved', letter.resolvedBy ? `${letter.resolvedBy}: ${letter.resolution || ''}` : null),
  );
  renderGuard(guard);
  renderPartnerError(partnerErrorOf(letter, guard));
  $('detail-trace').onclick = () => traceLink(letter.commandId || String(letter.id));
  $('detail-value').textContent = pretty(letter.value);
  $('corrected-block').hidden = !letter.correctedValue;
  $('detail-corrected').textContent = letter.correctedValue ? pretty(letter.correctedValue) : '';
  $('detail-headers')
    .querySelector('tbody')
    .replaceChildren(
      ...Object.entries(letter.headers)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => el('tr', {}, el('td', {}, k), el('td', { class: 'mono' }, v))),
    );
  $('detail-audit').replaceChildren(
    ...(audit.length
      ? audit.map((a) =>
          el('li', {}, `${fmtTime(a.at)} · ${a.actor} · ${a.action}${a.reason ? ` — ${a.reason}` : ''}`),
        )
      : [el('li', { class: 'muted' }, 'No actions yet.')]),
  );
  $('actions').hidden = letter.state !== 'open';
  $('redrive-confirm').hidden = true;
  $('redrive').hidden = false;
  $('correct-toggle').checked = false;
  $('correction').hidden = true;
  try {
    $('correction').value = JSON.stringify(JSON.parse(letter.value).data, null, 2);
  } catch {
    $('correction').value = letter.value;
  }
}

/**
 * The Partner API's whole error for a letter: the indexed letter's `error` object when the indexer
 * keeps it, else the `dlq-error` header (JSON), else the guard row's last error.
 */
function partnerErrorOf(letter, guard) {
  if (letter.error && typeof letter.error === 'object') return letter.error;
  const header = letter.headers && letter.headers['dlq-error'];
  if (header) {
    try {
      const parsed = JSON.parse(header);
      if (parsed && typeof parsed === 'object') return parsed;
    } catch {
      // not JSON: fall through to the guard's copy
    }
  }
  if (guard && guard.lastError && typeof guard.lastError === 'object') return guard.lastError;
  return null;
}

const ERROR_FIELDS = [
  ['code', 'Code'],
  ['status', 'Status'],
  ['message', 'Message'],
  ['processor_code', 'Processor code'],
  ['processor_decline_code', 'Decline code'],
  ['request_id', 'Request id'],
  ['error_id', 'Error id'],
  ['error_signature', 'Error signature'],
];

function renderPartnerError(error) {
  $('partner-error-block').hidden = !error;
  if (!error) return $('partner-error').replaceChildren();
  const summary = el('dl', { class: 'summary' });
  for (const [field, label] of ERROR_FIELDS) {
    if (error[field] == null || error[field] === '') continue;
    let value = String(error[field]);
    if (field === 'code' && error.code_missing) value += ' (the answer carried no code)';
    summary.append(el('dt', {}, label), el('dd', { class: 'mono', 'data-field': field }, value));
  }
  const parts = [summary];
  if (Array.isArray(error.errors) && error.errors.length) {
    parts.push(
      el('p', { class: 'muted small' }, 'Validation errors'),
      el(
        'ul',
        { class: 'errors-list', 'data-field': 'errors' },
        ...error.errors.map((e) => el('li', {}, String(e))),
      ),
    );
  }
  if (error.details && typeof error.details === 'object' && Object.keys(error.details).length) {
    parts.push(
      el('p', { class: 'muted small' }, 'Details'),
      el(
        'table',
        { class: 'kv', 'data-field': 'details' },
        el(
          'tbody',
          {},
          ...Object.entries(error.details).map(([k, v]) =>
            el(
              'tr',
              {},
              el('td', {}, k),
              el('td', { class: 'mono' }, typeof v === 'string' ? v : JSON.stringify(v)),
            ),
          ),
        ),
      ),
    );
  }
  if (error.extra && typeof error.extra === 'object' && Object.keys(error.extra).length) {
    parts.push(
      el('p', { class: 'muted small' }, 'Other fields'),
      el('pre', { class: 'code', 'data-field': 'extra' }, JSON.stringify(error.extra, null, 2)),
    );
  }
  $('partner-error').replaceChildren(...parts);
}

/** Redrive asks first: one click shows what will be republished where, a second one does it. */
function askRedrive() {
  const row = $('letters-table').querySelector(`tbody tr[data-id="${selectedId}"]`);
  const topic = row ? row.querySelector('td.topic')?.textContent : '';
  const corrected = $('correct-toggle').checked ? ' with your correction' : '';
  $('redrive-confirm-text').textContent =
    `Republish dead letter #${selectedId}${corrected} to ${topic || 'its original topic'}? The consumer will run the command again.`;
  $('redrive-confirm').hidden = false;
  $('redrive').hidden = true;
}

function cancelRedrive() {
  $('redrive-confirm').hidden = true;
  $('redrive').hidden = false;
}

function showResult(text, ok) {
  const box = $('action-result');
  box.textContent = text;
  box.className = `notice ${ok ? 'ok' : 'bad'}`;
}

async function redrive() {
  cancelRedrive();
  const body = { reason: $('redrive-reason').value.trim() || undefined };
  if ($('correct-toggle').checked) body.corrected_value = $('correction').value;
  try {
    const { outcome } = await api(`dead-letters/${selectedId}/redrive`, { method: 'POST', body });
    showResult(
      outcome.action === 'close_applied' ? `Closed: ${outcome.message}` : `Redriven: ${outcome.message}`,
      true,
    );
  } catch (error) {
    showResult(`Not redriven: ${error.message}`, false);
  }
  await Promise.all([openLetter(selectedId), loadLetters()]);
}

async function discard() {
  const reason = $('discard-reason').value.trim();
  if (!reason) {
    showResult('A reason is required to discard.', false);
    return;
  }
  try {
    await api(`dead-letters/${selectedId}/discard`, { method: 'POST', body: { reason } });
    showResult('Discarded.', true);
  } catch (error) {
    showResult(`Not discarded: ${error.message}`, false);
  }
  await Promise.all([openLetter(selectedId), loadLetters()]);
}

// ---- audit --------------------------------------------------------------------------------

/** One readable line per audit entry; the full details are in the cell's tooltip. */
function auditSummary(d) {
  const parts = [];
  if (d.commandId)
    parts.push(
      `command "${showText(d.commandId)}"${d.commandSource != null ? ` from "${showText(d.commandSource)}"` : ''}`,
    );
  if (d.guardRowReset) parts.push(`guard ${d.guardRowReset.state} → ${d.guardRowReset.resetTo}`);
  else if (d.guardState) parts.push(`guard ${d.guardState}`);
  if (d.corrected) parts.push('with correction');
  if (d.topic) parts.push(`to ${d.topic}`);
  if (d.errorCode) parts.push(`error ${d.errorCode}`);
  return parts.join(' · ') || JSON.stringify(d).slice(0, 160);
}

async function loadAudit() {
  const { items } = await api('audit?limit=200');
  $('audit-table')
    .querySelector('tbody')
    .replaceChildren(
      ...items.map((a) =>
        el(
          'tr',
          {},
          el('td', { class: 'mono' }, fmtTime(a.at)),
          el('td', {}, a.actor),
          el('td', {}, a.action),
          el('td', { class: 'mono' }, a.target),
          el('td', {}, a.reason || '–'),
          el('td', { class: 'mono', title: JSON.stringify(a.details, null, 2) }, auditSummary(a.details)),
        ),
      ),
    );
}

// ---- wiring -------------------------------------------------------------------------------

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (e) => void login(e));
  $('logout').addEventListener('click', logout);
  $('filters').addEventListener('submit', (e) => {
    e.preventDefault();
    void loadLetters();
  });
  $('reset-filters').addEventListener('click', () => {
    $('filters').reset();
    void loadLetters();
  });
  for (const b of document.querySelectorAll('.tab'))
    b.addEventListener('click', () => switchTab(b.dataset.tab));
  $('correct-toggle').addEventListener(
    'change',
    () => ($('correction').hidden = !$('correct-toggle').checked),
  );
  $('redrive').addEventListener('click', askRedrive);
  $('redrive-yes').addEventListener('click', () => void redrive());
  $('redrive-no').addEventListener('click', cancelRedrive);
  $('trace-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const id = $('trace-id').value.trim();
    if (id) traceLink(id);
  });
  window.addEventListener('hashchange', route);
  $('discard').addEventListener('click', () => void discard());
  $('actor').value = sessionStorage.getItem(ACTOR_KEY) || '';
  const signedIn = Boolean(sessionStorage.getItem(TOKEN_KEY));
  showApp(signedIn);
  if (signedIn) route();
});
