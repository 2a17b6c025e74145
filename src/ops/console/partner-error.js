// The Partner API's whole error for a dead letter, shown field by field. The API reads it (the
// letter's `dlq-error` header, else the guard row's last error) and sends it as `partnerError`.
import { $, el, table } from './dom.js';

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

function summaryNode(error) {
  const summary = el('dl', { class: 'summary' });
  for (const [field, label] of ERROR_FIELDS) {
    if (error[field] == null || error[field] === '') continue;
    let value = String(error[field]);
    if (field === 'code' && error.code_missing) value += ' (the answer carried no code)';
    summary.append(el('dt', {}, label), el('dd', { class: 'mono', 'data-field': field }, value));
  }
  return summary;
}

function detailsNode(details) {
  return table(
    { class: 'kv', 'data-field': 'details' },
    null,
    Object.entries(details).map(([k, v]) =>
      el(
        'tr',
        {},
        el('td', {}, k),
        el('td', { class: 'mono' }, typeof v === 'string' ? v : JSON.stringify(v)),
      ),
    ),
  );
}

const isFilledObject = (value) => value && typeof value === 'object' && Object.keys(value).length > 0;

export function renderPartnerError(error) {
  $('partner-error-block').hidden = !error;
  if (!error) return $('partner-error').replaceChildren();
  const parts = [summaryNode(error)];
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
  if (isFilledObject(error.details)) {
    parts.push(el('p', { class: 'muted small' }, 'Details'), detailsNode(error.details));
  }
  if (isFilledObject(error.extra)) {
    parts.push(
      el('p', { class: 'muted small' }, 'Other fields'),
      el('pre', { class: 'code', 'data-field': 'extra' }, JSON.stringify(error.extra, null, 2)),
    );
  }
  $('partner-error').replaceChildren(...parts);
}
