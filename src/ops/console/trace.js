/* global window, URLSearchParams */
// The trace view: the life of one event from any of its ids (GET /ops/api/trace/:id).
import { $, el } from './dom.js';
import { allowed, api, isRefused, signOut } from './session.js';
import { askReason } from './reveal.js';

let currentTraceId = null;

/** The id the trace view shows last (the Trace tab goes back to it). */
export const lastTracedId = () => currentTraceId;

/** Opens the trace view for an id (the search box, a letter's "Trace this event", an id in a trace). */
export function traceLink(id) {
  window.location.hash = `#trace/${encodeURIComponent(id)}`;
}

const TRACEABLE = new Set([
  'webhookId',
  'eventId',
  'commandId',
  'requestId',
  'deadLetterId',
  'recordId',
  'targetId',
  'subject',
  'key',
]);

function factsNode(details) {
  const box = el('div', { class: 'facts' });
  for (const [k, v] of Object.entries(details)) {
    if (v == null || v === '') continue;
    const value = TRACEABLE.has(k)
      ? el(
          'button',
          { type: 'button', class: 'link mono', title: `trace ${v}`, onclick: () => traceLink(String(v)) },
          String(v),
        )
      : el('span', { class: 'mono' }, String(v));
    box.append(el('span', { class: 'fact' }, el('span', { class: 'muted' }, `${k} `), value));
  }
  return box;
}

const KIND_NAMES = {
  webhook: 'webhook id',
  event: 'CloudEvent id',
  command: 'command id',
  request: 'Partner request id',
  record: 'record id',
  'dead-letter': 'dead-letter id',
};

/** When the id matched several kinds of id: say which, and let the user follow only one. */
function kindsNode(id, trace) {
  const box = $('trace-kinds');
  box.hidden = trace.matchedAs.length < 2;
  if (box.hidden) return box.replaceChildren();
  const choice = (kind, label) =>
    el(
      'button',
      {
        type: 'button',
        class: `chip${(trace.as ?? null) === kind ? ' active' : ''}`,
        'data-kind': kind ?? 'all',
        onclick: () => void showTrace(id, kind),
      },
      label,
    );
  box.replaceChildren(
    el('span', { class: 'muted' }, `"${id}" matched as: `),
    ...trace.matchedAs.map((k) => choice(k, KIND_NAMES[k] ?? k)),
    choice(null, 'all of them'),
  );
  return box;
}

/**
 * When the id is the own id of several commands (acme's decision 42, acme's payment 42, beta's
 * payment 42): one button per command, tracing it alone by its source and type.
 */
function candidatesNodes(id, trace) {
  const [first] = trace.ends;
  return [
    el('li', {}, first ?? ''),
    ...trace.candidates.map((c) =>
      el(
        'li',
        { 'data-testid': 'trace-candidate' },
        el(
          'button',
          {
            type: 'button',
            class: 'link mono',
            'data-source': c.source,
            'data-command-type': c.commandType,
            onclick: () => void showTrace(id, null, { source: c.source, type: c.commandType }),
          },
          `${c.source === '' ? '(unknown source)' : c.source} ${c.commandType} "${c.commandId}"`,
        ),
        ` → ${c.targetId}, ${c.state}`,
      ),
    ),
  ];
}

function tracePath(id, as, scope) {
  const query = new URLSearchParams();
  if (as) query.set('as', as);
  if (scope?.source !== undefined) query.set('source', scope.source);
  if (scope?.type) query.set('type', scope.type);
  const q = query.toString();
  return `trace/${encodeURIComponent(id)}${q ? `?${q}` : ''}`;
}

/** An e-mail address or a phone number: tracing by it reveals whether that person is here. */
// The same rule as isPersonalSearch in src/personal-data.ts.
const looksPersonal = (id) => {
  const digits = id.replace(/\D/g, '').length;
  return /@/.test(id) || (/^\+?[\d\s().-]+$/.test(id.trim()) && digits >= 10 && digits <= 15);
};

export async function showTrace(id, as = null, scope = null, revealing = false) {
  currentTraceId = id;
  $('trace-id').value = id;
  $('trace-error').textContent = '';
  if (!id) {
    $('trace-title').textContent = 'Trace an id';
    $('trace-table').hidden = true;
    $('trace-kinds').hidden = true;
    $('trace-ends').replaceChildren(el('li', { class: 'muted' }, 'Type an id in the search box above.'));
    return;
  }
  $('trace-title').textContent = `Trace of ${id}`;
  $('trace-reveal').hidden = !allowed('POST /reveal');
  $('trace-reveal').onclick = () => showTrace(id, as, scope, true);
  try {
    // A trace by an e-mail or a phone is a search by a personal value: a reveal (decision 052).
    const reveal = revealing || looksPersonal(id);
    const reason = reveal && allowed('POST /reveal') ? askReason(`the trace of ${id}`) : null;
    if (reveal && allowed('POST /reveal') && !reason) {
      $('trace-error').textContent = 'Not revealed: a reason is needed (it is kept in the audit).';
      return;
    }
    const trace = reason
      ? (
          await api('reveal', {
            method: 'POST',
            body: { kind: 'trace', id, reason, ...(scope ?? {}) },
          })
        ).item
      : await api(tracePath(id, as, scope));
    if (scope) $('trace-title').textContent = `Trace of ${id} (${scope.source} ${scope.type})`;
    kindsNode(id, trace);
    $('trace-table').hidden = trace.steps.length === 0;
    $('trace-table')
      .querySelector('tbody')
      .replaceChildren(
        ...trace.steps.map((s) =>
          el(
            'tr',
            { 'data-stage': s.stage },
            el('td', { class: 'mono nowrap' }, s.at.replace('T', ' ')),
            el('td', {}, el('span', { class: `badge stage-${s.stage}` }, s.stage)),
            el('td', {}, s.what),
            el('td', {}, factsNode(s.details)),
          ),
        ),
      );
    $('trace-ends').replaceChildren(
      ...(trace.candidates ? candidatesNodes(id, trace) : trace.ends.map((e) => el('li', {}, e))),
    );
  } catch (error) {
    if (isRefused(error)) return signOut();
    $('trace-error').textContent = `Cannot trace: ${error.message}`;
  }
}
