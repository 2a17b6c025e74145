// The Tokens page (admin, issue 44): personal tokens listed (never their secret), created (the new
// token shown once, in this page only) and revoked. The same as `rentbridge ops-token`, audited
// under the admin's identity by the server.
import { $, el, fmtTime } from './dom.js';
import { api } from './session.js';

function tokenRow(token) {
  const revoke = el('button', { type: 'button', class: 'danger', 'data-revoke': token.name }, 'Revoke');
  revoke.addEventListener('click', () => void revokeToken(token.name));
  return el(
    'tr',
    { 'data-token': token.name },
    el('td', { class: 'mono' }, token.name),
    el('td', {}, token.role),
    el('td', {}, token.created_by),
    el('td', { class: 'mono' }, fmtTime(token.created_at)),
    el('td', { class: 'mono' }, token.expires_at ? fmtTime(token.expires_at) : 'never'),
    el('td', { class: 'mono' }, token.last_used_at ? fmtTime(token.last_used_at) : 'never'),
    el('td', {}, revoke),
  );
}

export async function loadTokens() {
  $('token-error').textContent = '';
  const { items } = await api('tokens');
  $('tokens-table')
    .querySelector('tbody')
    .replaceChildren(
      ...(items.length ? items.map(tokenRow) : [el('tr', {}, el('td', { colspan: '7' }, 'No tokens yet.'))]),
    );
}

async function createToken(event) {
  event.preventDefault();
  $('token-error').textContent = '';
  const days = $('new-token-days').value.trim();
  try {
    const created = await api('tokens', {
      method: 'POST',
      body: {
        name: $('new-token-name').value.trim(),
        role: $('new-token-role').value,
        ...(days && { expires_days: Number(days) }),
      },
    });
    $('new-token-value').textContent = created.token;
    $('new-token-for').textContent = `${created.name} (${created.role})`;
    $('new-token').hidden = false;
    $('token-form').reset();
    await loadTokens();
  } catch (error) {
    $('token-error').textContent = error.message;
  }
}

async function revokeToken(name) {
  $('token-error').textContent = '';
  try {
    await api(`tokens/${encodeURIComponent(name)}`, { method: 'DELETE' });
    await loadTokens();
  } catch (error) {
    $('token-error').textContent = error.message;
  }
}

export function wireTokens() {
  $('token-form').addEventListener('submit', (e) => void createToken(e));
  $('new-token-done').addEventListener('click', () => {
    // Shown once: gone from the page when dismissed or when another page is opened.
    $('new-token-value').textContent = '';
    $('new-token').hidden = true;
  });
}

export function forgetNewToken() {
  $('new-token-value').textContent = '';
  $('new-token').hidden = true;
}
