/* global document, window */
// The ops console: vanilla JS modules, no build step. Everything it shows comes from /ops/api
// (bearer OPS_TOKEN kept in sessionStorage). This module signs in and out and routes between the
// views; each view is a module of its own and no state is shared through globals.
import { loadAudit } from './audit.js';
import { $ } from './dom.js';
import { wireLetterActions } from './letter-actions.js';
import { loadLetters, wireFilters } from './letters.js';
import { loadReconciliation } from './reconciliation.js';
import { startOverview, stopOverview } from './overview.js';
import { actorName, api, forgetToken, keepCredentials, onSignOut, signOut, signedIn } from './session.js';
import { lastTracedId, showTrace, traceLink } from './trace.js';

const TABS = ['overview', 'trace', 'letters', 'audit', 'reconciliation'];

function showApp(isSignedIn) {
  $('login').hidden = isSignedIn;
  $('tabs').hidden = !isSignedIn;
  $('session').hidden = !isSignedIn;
  $('trace-form').hidden = !isSignedIn;
  for (const tab of TABS) $(tab).hidden = true;
  if (!isSignedIn) stopOverview();
  if (isSignedIn) $('whoami').textContent = `signed in as ${actorName() || 'ops-api'}`;
}

async function login(event) {
  event.preventDefault();
  $('login-error').textContent = '';
  keepCredentials($('token').value.trim(), $('actor').value.trim());
  try {
    await api('dead-letters?limit=1');
    $('token').value = '';
    showApp(true);
    route();
  } catch (error) {
    forgetToken();
    $('login-error').textContent =
      error.status === 403 ? 'That token is not valid.' : `Cannot sign in: ${error.message}`;
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
  if (tab === 'overview') void startOverview();
  else if (tab === 'trace') void showTrace(rest.length ? decodeURIComponent(rest.join('/')) : '');
  else if (tab === 'audit') void loadAudit();
  else if (tab === 'reconciliation') void loadReconciliation();
  else void loadLetters();
}

function wire() {
  $('login-form').addEventListener('submit', (e) => void login(e));
  $('logout').addEventListener('click', signOut);
  onSignOut(() => showApp(false));
  wireFilters();
  wireLetterActions();
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
wire();
$('actor').value = actorName();
showApp(signedIn());
if (signedIn()) route();
