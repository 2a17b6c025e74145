// One dead letter in the side panel: summary, Partner error, guard state, value, headers, history.
import { $, el, fmtTime, pretty, showText, table } from './dom.js';
import { renderPartnerError } from './partner-error.js';
import { allowed, api } from './session.js';
import { askReason } from './reveal.js';
import { traceLink } from './trace.js';

let selectedId = null;

/** The id of the letter the panel shows (null before one is opened). */
export const selectedLetterId = () => selectedId;

function summaryRow(label, value) {
  return [el('dt', {}, label), el('dd', { class: 'mono' }, value == null || value === '' ? '–' : value)];
}

function attemptsTable(history) {
  const rows = history.map((a) =>
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
  if (!rows.length) return el('p', { class: 'muted' }, 'No attempts recorded.');
  return table({ class: 'kv' }, ['#', 'kind', 'started', 'result', 'request id'], rows);
}

function renderGuard(guard) {
  const box = $('guard');
  if (!guard) {
    box.replaceChildren(
      el('p', { class: 'muted' }, 'No guard row for this command (never tried, or reset by a redrive).'),
    );
    return;
  }
  box.replaceChildren(
    el(
      'p',
      {},
      el('span', { class: 'badge', 'data-testid': 'guard-state' }, guard.state),
      ` ${guard.attempts} attempt(s), updated ${fmtTime(guard.updatedAt)}`,
    ),
    attemptsTable(guard.history),
  );
}

function renderSummary(letter) {
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
}

function renderContent(letter, audit) {
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
}

/** The actions start closed: no confirmation shown, no correction, the letter's data to edit. */
function resetActions(letter) {
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
 * Personal values come masked (decision 052); an operator or admin reveals this one letter with a
 * reason (audited), which also fills the correction with the real values, never with masks.
 */
async function revealLetter(id) {
  const reason = askReason(`dead letter #${id}`);
  if (!reason) return;
  const { item } = await api('reveal', { method: 'POST', body: { kind: 'dead_letter', id, reason } });
  renderLetter(item, true);
}

/** The detail lies over the list's right side (the list keeps the whole width): closed by ✕ or Esc. */
export function closeLetter() {
  selectedId = null;
  $('detail').hidden = true;
  for (const tr of $('letters-table').querySelectorAll('tbody tr.selected')) tr.classList.remove('selected');
}

export async function openLetter(id) {
  selectedId = id;
  for (const tr of $('letters-table').querySelectorAll('tbody tr')) {
    tr.classList.toggle('selected', Number(tr.dataset.id) === id);
  }
  renderLetter(await api(`dead-letters/${id}`), false);
}

function renderLetter({ letter, guard, audit, partnerError }, revealed) {
  $('detail-reveal').hidden = revealed || !allowed('POST /reveal');
  $('detail-reveal').onclick = () => revealLetter(letter.id);
  $('detail-masked').hidden = revealed;
  $('detail').hidden = false;
  $('detail-title').textContent = `Dead letter #${letter.id}`;
  const state = $('detail-state');
  state.textContent = letter.state;
  state.className = `badge ${letter.state}`;
  renderSummary(letter);
  renderGuard(guard);
  renderPartnerError(partnerError);
  $('detail-trace').onclick = () => traceLink(letter.commandId || String(letter.id));
  renderContent(letter, audit);
  resetActions(letter);
}
