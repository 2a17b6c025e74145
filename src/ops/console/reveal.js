/* global window */
// Revealing personal data (decision 052): one item at a time, with a reason kept in the audit.

/** The reason the person gives, trimmed; null when they cancel or give none. */
export function askReason(what) {
  const given = window.prompt(
    `Reveal the personal data of ${what}?\nSay why (kept in the audit with your name, never the values):`,
  );
  const reason = given == null ? '' : given.trim();
  return reason.length >= 3 ? reason : null;
}
