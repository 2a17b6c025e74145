/* global document, window */
// DOM helpers and text formatting for the console's views. Text from letters is always set with
// textContent (el's children), never as HTML.

export const $ = (id) => document.getElementById(id);

export function el(tag, attrs, ...children) {
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

/** A header row: a `th` a column (an empty name: an empty cell). */
export function headRow(columns) {
  return el('tr', {}, ...columns.map((column) => el('th', {}, column || null)));
}

/** A table of `rows` (`tr`s) under a header row of `columns`; without `columns`, no header. */
export function table(attrs, columns, rows) {
  return el('table', attrs, columns ? el('thead', {}, headRow(columns)) : null, el('tbody', {}, ...rows));
}

/**
 * The page's own tables (index.html) name their columns once, `data-columns="When|Who|…"`: each
 * gets its header row here, before any view fills its tbody.
 */
export function tableHeads(root = document) {
  for (const t of root.querySelectorAll('table[data-columns]'))
    t.prepend(el('thead', {}, headRow(t.dataset.columns.split('|'))));
}

export function fmtTime(iso) {
  if (!iso) return '–';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function shortTime(iso) {
  return iso ? iso.slice(0, 16).replace('T', ' ') : '–';
}

/**
 * Ids are the PMS's own text (any characters but controls): invisible and direction-changing
 * characters, quotes and backslashes are shown escaped, so an id reads as what it is.
 */
export function showText(text) {
  return String(text).replace(
    // eslint-disable-next-line no-control-regex -- control characters are exactly what must be shown escaped
    /[\u0000-\u001f\u007f-\u009f"\\\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g,
    (c) => (c === '"' ? '\\"' : c === '\\' ? '\\\\' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  );
}

/** A cell that keeps one line: long ids are cut with an ellipsis, the full text is in the tooltip. */
export function cut(text, cls = 'mono') {
  const value = text == null || text === '' ? '–' : showText(text);
  return el('td', { class: `${cls} cut`, title: value }, value);
}

/**
 * The whole topic, wrapping only after its dots (a topic is never cut): each part between dots
 * keeps to one line, so `application-decisions` is never broken at its hyphen.
 */
export function topicCell(topic) {
  const td = el('td', { class: 'mono topic', title: topic || '' });
  const parts = String(topic || '–').split('.');
  parts.forEach((part, i) => {
    td.append(el('span', { class: 'nowrap' }, i < parts.length - 1 ? `${part}.` : part));
    if (i < parts.length - 1) td.append(el('wbr'));
  });
  return td;
}

/** A time whole, to the second, on one line (`2026-11-28 22:14:05Z`), the ISO value on hover. */
export function timeCell(iso) {
  return el('td', { class: 'mono nowrap', title: iso || '' }, fmtTime(iso));
}

export function pretty(value) {
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}
