/* global document */
// The overview's first screen (decision 057): what needs a person now, each with its count and a
// link to where one acts, and the flow as one band of stages, each its state and one figure. The
// stage cards with their charts follow below. The tab's title carries the list's length.
import { $, el } from './dom.js';

const BAND = ['receiver', 'outbox', 'relay', 'kafka', 'consumers', 'partner', 'poller', 'dead-letters'];
const STATUS_TEXT = {
  moving: 'moving',
  idle: 'idle',
  attention: 'needs attention',
  stalled: 'not moving',
  stopped: 'not running',
};
const TITLE = 'rentbridge ops';
/** The band's names, short enough for one line at 1280 px (the cards below say them whole). */
const SHORT = { consumers: 'Consumers' };

/** "(3) rentbridge ops": the count is seen from another tab, as a mail client's unread count. */
export function titleWith(count) {
  document.title = count > 0 ? `(${count}) ${TITLE}` : TITLE;
}

function itemNode(item) {
  return el(
    'li',
    { class: `attention-item ${item.severity}`, 'data-kind': item.kind },
    el('span', { class: 'attention-count mono', 'data-testid': 'attention-count' }, String(item.count)),
    el(
      'span',
      { class: 'attention-what' },
      el('a', { href: item.href, class: 'attention-title' }, item.title),
      el('span', { class: 'attention-detail muted' }, item.detail),
    ),
    el('a', { href: item.href, class: 'attention-action' }, `${item.action} →`),
  );
}

export function renderAttention(items) {
  $('attention-count').textContent = items.length ? String(items.length) : '';
  $('attention').dataset.state = items.length ? 'open' : 'clear';
  $('attention-list').replaceChildren(
    ...(items.length
      ? items.map(itemNode)
      : [
          el(
            'li',
            { class: 'attention-none', 'data-testid': 'attention-none' },
            'Nothing needs a person now.',
          ),
        ]),
  );
  titleWith(items.length);
}

/** The flow as one band: each stage's name, state and key figure, linking to its card below. */
export function renderBand(stages) {
  const byId = Object.fromEntries(stages.map((s) => [s.id, s]));
  $('band').replaceChildren(
    ...BAND.filter((id) => byId[id]).map((id) => {
      const s = byId[id];
      return el(
        'a',
        {
          class: `band-stage ${s.status}`,
          href: `#overview/${id}`,
          // data-band, not data-stage: `[data-stage=…]` names the stage's card below, alone.
          'data-band': id,
          'data-status': s.status,
          title: s.note,
        },
        el('span', { class: 'band-title' }, SHORT[id] ?? s.title),
        el('span', { class: `status ${s.status}` }, STATUS_TEXT[s.status]),
        el('span', { class: 'band-value mono' }, s.key ? String(s.key.value) : ''),
        el('span', { class: 'band-label muted' }, s.key ? s.key.label : ''),
      );
    }),
  );
}

/** `#overview/<stage>`: that stage's card (or the callbacks' card) brought into view. */
export function scrollToPart(part) {
  if (!part) return;
  const target =
    part === 'callbacks' ? $('callbacks') : document.querySelector(`.stage[data-stage="${part}"]`);
  if (target) target.scrollIntoView({ block: 'start' });
}
