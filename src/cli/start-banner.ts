/**
 * What `rentbridge start` prints once every role runs, for a person at a terminal: where to look
 * and what to try, as a block of its own after the start-up lines (on a pipe it is one JSON log
 * line with the same fields instead).
 */
export interface BannerFields {
  console: string;
  metrics: string;
  ready: string;
  demoOpsToken?: string;
  demoPmsWebhook?: string;
  demoPmsWebhookSecret?: string;
}

export function startBanner(fields: BannerFields, demo: boolean): string {
  const rule = '─'.repeat(72);
  const lines = [
    '',
    rule,
    demo
      ? ' rentbridge is running (demo): events and commands flow within a minute'
      : ' rentbridge is running',
    '',
    ` console        ${fields.console}`,
    ...(fields.demoOpsToken ? [` ops token      ${fields.demoOpsToken}`] : []),
    ` metrics        ${fields.metrics}`,
    ` ready          ${fields.ready}`,
    ...(fields.demoPmsWebhook
      ? [` demo webhook   ${fields.demoPmsWebhook}`, ` demo secret    ${fields.demoPmsWebhookSecret ?? ''}`]
      : []),
    '',
    ' try next:',
    `   open ${fields.console} and sign in with the ops token`,
    '   npx rentbridge dlq list          the dead letters waiting for an operator',
    '   npx rentbridge trace <any id>    where an event or command went, step by step',
    '   README.md, "Send a payment"      sending a payment or a decision yourself',
    '',
    ' Ctrl-C stops everything; data is kept (npm start -- --fresh starts empty)',
    rule,
    '',
  ];
  return lines.join('\n');
}
