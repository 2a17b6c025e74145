/* global window, URLSearchParams */
// The dead-letter list: the filter form, the counts by reason and code, one row per letter.
import { $, cut, el, timeCell, topicCell } from './dom.js';
import { openLetter, selectedLetterId } from './letter-detail.js';
import { api, isRefused, signOut } from './session.js';

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
    el(
      'span',
      { class: 'chip total', 'data-testid': 'count-total' },
      `${counts.total}${counts.capped ? '+' : ''} letters`,
    ),
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

function letterRow(l) {
  return el(
    'tr',
    {
      'data-id': l.id,
      class: l.id === selectedLetterId() ? 'selected' : '',
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
    timeCell(l.lastFailureAt),
  );
}

let choices;

/** The filters' choices (command types, reasons) as the service knows them: `GET /ops/api/filters`. */
async function loadChoices() {
  const filters = await api('filters');
  const fill = (id, values) => $(id).append(...values.map((v) => el('option', { value: v }, v)));
  fill('f-command-type', filters.command_types);
  fill('f-reason', filters.reasons);
}

/**
 * `#letters/reason=rejected`: the overview's attention list links here with filters in the address
 * (any of the form's field names); the form shows them, the rest reset.
 */
function applyAddressFilters(part) {
  if (!part) return;
  $('filters').reset();
  for (const [name, value] of new URLSearchParams(part)) {
    const field = $('filters').elements.namedItem(name);
    if (field) field.value = value;
  }
}

export async function loadLetters(part) {
  $('list-error').textContent = '';
  try {
    choices ??= loadChoices().catch((error) => {
      choices = undefined;
      throw error;
    });
    await choices;
    applyAddressFilters(part);
    const { items, counts } = await api(`dead-letters?${filterQuery()}`);
    renderCounts(counts);
    $('letters-table')
      .querySelector('tbody')
      .replaceChildren(...items.map(letterRow));
    $('empty').hidden = items.length > 0;
  } catch (error) {
    if (isRefused(error)) return signOut();
    $('list-error').textContent = error.message;
  }
}

/** The filter form searches on submit and clears on Reset. */
export function wireFilters() {
  $('filters').addEventListener('submit', (e) => {
    e.preventDefault();
    void loadLetters();
  });
  $('reset-filters').addEventListener('click', () => {
    $('filters').reset();
    void loadLetters();
  });
}
