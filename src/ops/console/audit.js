// The audit log: every ops action, newest first.
import { $, el, fmtTime, showText } from './dom.js';
import { api } from './session.js';

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

export async function loadAudit() {
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
