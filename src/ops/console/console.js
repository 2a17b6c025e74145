/* global document, window, fetch */
// The ops console: vanilla JS modules, no build step. Everything it shows comes from /ops/api
// (bearer OPS_TOKEN kept in sessionStorage). This module signs in and out and routes between the
// views; each view is a module of its own and no state is shared through globals.
import { loadAudit } from './audit.js';
import { $, tableHeads } from './dom.js';
import { wireLetterActions } from './letter-actions.js';
import { loadLetters, wireFilters } from './letters.js';
import { loadReconciliation } from './reconciliation.js';
import { startOverview, stopOverview } from './overview.js';
import { forgetNewToken, loadTokens, wireTokens } from './tokens.js';
import { forgetToken, keepToken, loadSession, onSignOut, signOut, signedIn, whoAmI } from './session.js';
import { lastTracedId, showTrace, traceLink } from './trace.js';

const TABS = ['overview', 'trace', 'letters', 'audit', 'reconciliation', 'tokens'];

function showApp(isSignedIn) {
  $('login').hidden = isSignedIn;
  $('tabs').hidden = !isSignedIn;
  $('session').hidden = !isSignedIn;
  $('trace-form').hidden = !isSignedIn;
  for (const tab of TABS) $(tab).hidden = true;
  if (!isSignedIn) stopOverview();
  const me = whoAmI();
  // CSS hides what the role cannot do ([data-needs] in console.css); the server refuses it anyway.
  document.body.dataset.role = me ? me.role : '';
  if (me)
    // The break-glass token's name is "break-glass": said once ("break-glass · admin").
    $('whoami').textContent =
      me.kind === 'break-glass' && me.name !== 'break-glass'
        ? `${me.name} · ${me.role} (break-glass)`
        : `${me.name} · ${me.role}`;
  // Which release answers (GET /ops/api/session names it): the footer, once signed in.
  $('version').hidden = !me;
  $('version').textContent = me ? `rentbridge ${me.version}` : '';
}

async function login(event) {
  event.preventDefault();
  $('login-error').textContent = '';
  keepToken($('token').value.trim());
  if (await loadSession()) {
    $('token').value = '';
    showApp(true);
    route();
  } else {
    forgetToken();
    $('login-error').textContent = 'That token is not valid (unknown, revoked or expired).';
  }
}

// The URL's hash names the view (#overview, #trace/<id>, #letters, #audit): links and reloads
// keep it. The overview is the landing page.
function switchTab(tab) {
  const traced = lastTracedId();
  const hash = tab === 'trace' && traced ? `#trace/${encodeURIComponent(traced)}` : `#${tab}`;
  if (window.location.hash !== hash) window.location.hash = hash;
  else route();
}

function route() {
  if (!signedIn()) return;
  const [name, ...rest] = window.location.hash.replace(/^#/, '').split('/');
  const tab = TABS.includes(name) ? name : 'overview';
  for (const b of document.querySelectorAll('.tab')) b.classList.toggle('active', b.dataset.tab === tab);
  for (const t of TABS) $(t).hidden = t !== tab;
  if (tab !== 'overview') stopOverview();
  if (tab !== 'tokens') forgetNewToken();
  const part = rest.length ? decodeURIComponent(rest.join('/')) : '';
  if (tab === 'overview') void startOverview(part);
  else if (tab === 'trace') void showTrace(part);
  else if (tab === 'audit') void loadAudit();
  else if (tab === 'reconciliation') void loadReconciliation(part);
  else if (tab === 'tokens') void loadTokens();
  else void loadLetters(part);
}

function wire() {
  $('login-form').addEventListener('submit', (e) => void login(e));
  $('logout').addEventListener('click', () => void signOut());
  onSignOut(() => showApp(false));
  wireFilters();
  wireLetterActions();
  wireTokens();
  for (const b of document.querySelectorAll('.tab'))
    b.addEventListener('click', () => switchTab(b.dataset.tab));
  $('trace-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const id = $('trace-id').value.trim();
    if (id) traceLink(id);
  });
  window.addEventListener('hashchange', route);
}

// A module runs once the document is parsed (modules are deferred): the elements are there.
tableHeads();
wire();
// Single sign-on offered when configured; a session cookie or a stored token signs in at once.
void fetch('auth/methods')
  .then((res) => res.json())
  .then((methods) => ($('sso').hidden = !methods.sso))
  .catch(() => undefined);
void loadSession().then(() => {
  showApp(signedIn());
  if (signedIn()) route();
});
