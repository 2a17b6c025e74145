import { beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { applicationDecisions } from '../../src/command-types/application-decisions/application-decisions.js';
import { redriveDeadLetter } from '../../src/dead-letters/redrive.js';
import { traceId } from '../../src/event-trace/trace.js';
import { FAST_GUARD, logger, uid, type Harness } from '../consumers/support/harness.js';
import { useApp } from '../support/app.js';
import { runCli } from '../support/cli.js';

/**
 * Issue 41: after a redrive with a correction (application 999999999 → a real one), the trace
 * shows each attempt under the target it really had: the attempts before the correction under
 * 999999999, only those after it under the corrected application, in the trace the ops API and
 * the console read (traceId) and in `rentbridge trace`.
 */
describe('the trace of a redrive that corrected the target', () => {
  const app = useApp({
    harness: true,
    consumers: [applicationDecisions],
    consumerOverrides: { guard: FAST_GUARD },
    deadLetterIndexer: true,
  });
  let h: Harness;

  beforeAll(() => {
    h = app.harness;
  });

  it('shows the earlier attempts under the target they had, and the later ones under the corrected one', async () => {
    const [record] = await h.control.addRecords('applications', [{ status: 'submitted' }]);
    const application = String(record!.id);
    const decisionId = uid('fix');
    const id = await h.decision({
      decision_id: decisionId,
      application_id: 999_999_999,
      decision: 'approve',
    });
    const [first] = await h.outcomesOf(id);
    expect(first!.status).toBe('rejected');
    const letterId = await vi.waitFor(
      async () => {
        const letter = await h.database.db.deadLetter.findFirst({ where: { commandId: id } });
        expect(letter).not.toBeNull();
        return Number(letter!.id);
      },
      { timeout: 30_000, interval: 200 },
    );
    const deps = { db: h.database.db, producer: h.producer, topicPrefix: h.kafka.prefix, logger };
    const redriven = await redriveDeadLetter(deps, letterId, {
      actor: 'ops-test',
      correction: { decision_id: decisionId, application_id: Number(application), decision: 'approve' },
    });
    expect(redriven.action).toBe('send');
    const [, second] = await h.outcomesOf(id, 2);
    expect(second!.status).toBe('applied');

    const trace = await traceId(h.database.db, id, { topicPrefix: h.kafka.prefix, retentionHours: 72 });
    const taken = trace.steps.find((s) => s.stage === 'command' && s.what.includes('taken by the guard'));
    expect(taken?.what).toContain('taken by the guard for 999999999');
    const corrected = trace.steps.find((s) => s.what.includes('corrected by ops-test'));
    expect(corrected?.what).toContain(`target 999999999 → ${application}`);
    const guardSteps = trace.steps.filter((s) => ['snapshot', 'attempt', 'read-back'].includes(s.stage));
    const earlier = guardSteps.filter((s) => s.at < corrected!.at);
    const later = guardSteps.filter((s) => s.at >= corrected!.at);
    expect(earlier.filter((s) => s.stage === 'attempt').length).toBeGreaterThan(0);
    expect(later.filter((s) => s.stage === 'attempt').length).toBeGreaterThan(0);
    for (const s of earlier) {
      expect(s.details.targetId, s.what).toBe('999999999');
      expect(s.what).toContain('[target 999999999]');
    }
    for (const s of later) {
      expect(s.details.targetId, s.what).toBe(application);
      expect(s.what).toContain(`[target ${application}]`);
    }

    // The same, as `rentbridge trace` prints it.
    const cli = await runCli(['trace', id], {
      DATABASE_URL: h.database.url,
      KAFKA_BROKERS: inject('kafkaBrokers'),
      KAFKA_TOPIC_PREFIX: h.kafka.prefix,
      LOG_FORMAT: 'json',
    });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain('taken by the guard for 999999999');
    expect(cli.stdout).toContain(`target 999999999 → ${application}`);
    const lines = cli.stdout.split('\n');
    const correctedAt = lines.findIndex((l) => l.includes('corrected by ops-test'));
    expect(lines.some((l) => l.includes('[target 999999999]'))).toBe(true);
    expect(lines.some((l) => l.includes(`[target ${application}]`))).toBe(true);
    for (const [i, line] of lines.entries()) {
      if (!line.includes('[target ')) continue;
      expect(line, line).toContain(i < correctedAt ? '[target 999999999]' : `[target ${application}]`);
    }
  });
});
