import type { OverviewRows } from './overview-repository.js';
import { sum, type Stage } from './overview-model.js';

/**
 * Each stage's one figure on the overview's band (decision 057, as a stat panel: one number and
 * what it counts), chosen from what the stage already shows so the band and the card agree.
 */
export function keyFigure(stage: Stage, rows: OverviewRows): { label: string; value: string | number } {
  const figure = (label: string) => stage.figures.find((f) => f.label === label)?.value ?? 0;
  switch (stage.id) {
    case 'receiver':
      return { label: 'stored, last hour', value: figure('stored, last hour') };
    case 'outbox':
      return { label: 'waiting', value: rows.outbox.backlog };
    case 'relay':
      return { label: 'published, last hour', value: figure('published, last hour') };
    case 'kafka':
      return { label: 'messages, last hour', value: sum(stage.charts[0]?.series ?? []) };
    case 'consumers':
      return {
        label: 'finished, last hour',
        value: rows.commandsFinished.reduce((n, r) => n + r.n, 0),
      };
    case 'partner':
      return { label: 'attempts, last hour', value: rows.attempts.reduce((n, r) => n + r.n, 0) };
    case 'poller':
      return { label: 'resources polled', value: rows.pollers.length };
    case 'dead-letters':
      return { label: 'open', value: rows.deadLettersOpen.reduce((n, r) => n + r.n, 0) };
  }
}
