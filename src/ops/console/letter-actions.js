/* global document */
// Redrive and discard of the letter the panel shows. Redrive asks first.
import { $ } from './dom.js';
import { closeLetter, openLetter, selectedLetterId } from './letter-detail.js';
import { loadLetters } from './letters.js';
import { api } from './session.js';

/** Redrive asks first: one click shows what will be republished where, a second one does it. */
function askRedrive() {
  const selectedId = selectedLetterId();
  const row = $('letters-table').querySelector(`tbody tr[data-id="${selectedId}"]`);
  const topic = row ? row.querySelector('td.topic')?.textContent : '';
  const corrected = $('correct-toggle').checked ? ' with your correction' : '';
  $('redrive-confirm-text').textContent =
    `Republish dead letter #${selectedId}${corrected} to ${topic || 'its original topic'}? The consumer will run the command again.`;
  $('redrive-confirm').hidden = false;
  $('redrive').hidden = true;
}

function cancelRedrive() {
  $('redrive-confirm').hidden = true;
  $('redrive').hidden = false;
}

function showResult(text, ok) {
  const box = $('action-result');
  box.textContent = text;
  box.className = `notice ${ok ? 'ok' : 'bad'}`;
}

async function refresh(id) {
  await Promise.all([openLetter(id), loadLetters()]);
}

async function redrive() {
  cancelRedrive();
  const id = selectedLetterId();
  const body = { reason: $('redrive-reason').value.trim() || undefined };
  if ($('correct-toggle').checked) body.corrected_value = $('correction').value;
  try {
    const { outcome } = await api(`dead-letters/${id}/redrive`, { method: 'POST', body });
    showResult(
      outcome.action === 'close_applied' ? `Closed: ${outcome.message}` : `Redriven: ${outcome.message}`,
      true,
    );
  } catch (error) {
    showResult(`Not redriven: ${error.message}`, false);
  }
  await refresh(id);
}

async function discard() {
  const id = selectedLetterId();
  const reason = $('discard-reason').value.trim();
  if (!reason) {
    showResult('A reason is required to discard.', false);
    return;
  }
  try {
    await api(`dead-letters/${id}/discard`, { method: 'POST', body: { reason } });
    showResult('Discarded.', true);
  } catch (error) {
    showResult(`Not discarded: ${error.message}`, false);
  }
  await refresh(id);
}

export function wireLetterActions() {
  $('correct-toggle').addEventListener(
    'change',
    () => ($('correction').hidden = !$('correct-toggle').checked),
  );
  $('redrive').addEventListener('click', askRedrive);
  $('redrive-yes').addEventListener('click', () => void redrive());
  $('redrive-no').addEventListener('click', cancelRedrive);
  $('discard').addEventListener('click', () => void discard());
  $('detail-close').addEventListener('click', closeLetter);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !$('detail').hidden) closeLetter();
  });
}
