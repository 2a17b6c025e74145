import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { requireProbeAssumptions } from '../../src/partner-probe/probe-gate.js';
import { runProbe, probeTable, type ProbeReport } from '../../src/partner-probe/probe.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';
import { runCli } from '../support/cli.js';

const BOUND_MS = 1000;

describe('rentbridge probe', () => {
  let sandbox: Sandbox;
  let control: SandboxControl;
  let dir: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0 });
    control = createSandboxControl(sandbox.url);
    dir = mkdtempSync(join(tmpdir(), 'probe-'));
  });
  afterAll(async () => {
    await sandbox?.close();
  });
  beforeEach(async () => {
    await control.reset();
  });

  async function records() {
    await control.addRecords('customers', [{ first_name: 'Pat', last_name: 'Probe' }]);
    await control.addRecords('applications', [{ status: 'approved' }]);
    const [app] = await control.addRecords('applications', [{ status: 'submitted' }]);
    const [enrollment] = await control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    return { application: String(app!.id), enrollment: String(enrollment!.id) };
  }

  const probe = async (write: { application: string; enrollment: string } | null) =>
    runProbe({
      baseUrl: sandbox.url,
      accessKey: 'sandbox-access-key',
      secretKey: 'sandbox-secret-key',
      environment: 'sandbox',
      maxProcessingMs: BOUND_MS,
      pollMs: 50,
      ...(write && { write: { applicationId: write.application, enrollmentId: write.enrollment } }),
    });

  const resultOf = (report: ProbeReport, id: string) =>
    report.rows.filter((r) => r.guard_assumption === id).map((r) => r.result);

  describe("when pointed at rentbridge's own sandbox with writes", () => {
    it('finds every assumption holding, with the X-Request-Id of its evidence', async () => {
      const report = await probe(await records());
      // Customers created back to back rarely share a millisecond: the tie direction is then unseen.
      const failing = report.rows.filter(
        (r) => r.result !== 'holds' && !(r.step === 'customer tie-break' && r.result === 'could_not_tell'),
      );
      expect(failing.map((r) => `${r.step}: ${r.result} (${r.evidence})`)).toEqual([
        // A harmless request to an id that does not exist answers 404, which could be the route's.
        expect.stringMatching(/^decision approve path: could_not_tell/),
        expect.stringMatching(/^decision decline path: could_not_tell/),
        expect.stringMatching(/^report rental payments path: could_not_tell/),
      ]);
      expect(report.guard_assumptions_hold).toBe(true);
      expect(report.rows.find((r) => r.step === 'decision visible')!.request_ids.length).toBeGreaterThan(0);
      expect(probeTable(report)).toMatch(/Every guard assumption checked holds/);
    });
  });

  describe('when PMS sources have Partner API keys of their own', () => {
    it('checks that each authenticates and is read-only or scoped as configured', async () => {
      await records();
      await control.addRecords('applications', [{ status: 'submitted', owner_id: 'owner-beta' }]);
      await control.createKey({ access_key: 'beta-ak', secret_key: 'beta-sk', owner_ids: ['owner-beta'] });
      await control.createKey({ access_key: 'gamma-ak', secret_key: 'gamma-sk', read_only: true });
      const ledgerBefore = (await control.ledger()).writes.filter((w) => w.applied).length;
      const run = (sources: Parameters<typeof runProbe>[0]['sources']) =>
        runProbe({
          baseUrl: sandbox.url,
          accessKey: 'sandbox-access-key',
          secretKey: 'sandbox-secret-key',
          environment: 'sandbox',
          maxProcessingMs: BOUND_MS,
          sources,
        });
      const good = await run({
        beta: { accessKey: 'beta-ak', secretKey: 'beta-sk', scoped: true, readOnly: false },
        gamma: { accessKey: 'gamma-ak', secretKey: 'gamma-sk', readOnly: true, scoped: false },
      });
      const sourceRows = (r: ProbeReport) =>
        r.rows.filter((row) => row.step.startsWith('source ')).map((row) => `${row.step}: ${row.result}`);
      expect(sourceRows(good)).toEqual([
        'source beta: key authenticates: holds',
        'source beta: key may write: holds',
        'source beta: key scoped: holds',
        'source gamma: key authenticates: holds',
        'source gamma: key read-only: holds',
        'source gamma: key sees every record: holds',
      ]);
      expect(good.source_keys_hold).toBe(true);

      // Configured otherwise than the keys are, or a wrong secret: the probe says so and fails.
      const bad = await run({
        beta: { accessKey: 'beta-ak', secretKey: 'beta-sk', scoped: false, readOnly: true },
        delta: { accessKey: 'beta-ak', secretKey: 'not-the-secret' },
      });
      expect(sourceRows(bad)).toEqual([
        'source beta: key authenticates: holds',
        'source beta: key read-only: does_not_hold',
        'source beta: key sees every record: does_not_hold',
        'source delta: key authenticates: does_not_hold',
      ]);
      expect(bad.source_keys_hold).toBe(false);
      expect(probeTable(bad)).toMatch(/PMS source key is not as configured/);
      expect(JSON.stringify(bad)).not.toContain('not-the-secret');
      // Nothing was changed by the checks.
      expect((await control.ledger()).writes.filter((w) => w.applied).length).toBe(ledgerBefore);
    });
  });

  describe.each(['ascending', 'descending'] as const)(
    'when created_at is to the second and ties go by %s id',
    (tieBreak) => {
      it('says the customer order holds and reports the tie direction and the precision', async () => {
        await control.setConfig({ created_at_precision: 'seconds', tie_break: tieBreak });
        const report = await probe(await records());
        const row = (step: string) => report.rows.find((r) => r.step === step)!;
        expect(resultOf(report, 'customers_newest_first')).toEqual(['holds']);
        expect(row('created_at precision')).toMatchObject({ result: 'holds', observed: 'seconds' });
        expect(row('customer tie-break')).toMatchObject({ result: 'holds', observed: tieBreak });
        expect(report.guard_assumptions_hold).toBe(true);
      });
    },
  );

  describe('when created_at is to the millisecond', () => {
    it('reports sub-second precision', async () => {
      const report = await probe(await records());
      expect(report.rows.find((r) => r.step === 'created_at precision')).toMatchObject({
        result: 'holds',
        observed: 'sub-second',
      });
    });
  });

  describe('when read-only', () => {
    it('writes nothing and cannot tell the write-only guard assumptions', async () => {
      await records();
      const report = await probe(null);
      expect((await control.ledger()).writes.filter((w) => w.applied)).toEqual([]);
      expect(resultOf(report, 'payment_visible_on_enrollment')).toEqual(['could_not_tell']);
      expect(resultOf(report, 'date_filters')).toEqual(['holds']);
      expect(resultOf(report, 'customers_newest_first')).toEqual(['could_not_tell']);
      expect(report.guard_assumptions_hold).toBe(true);
    });
  });

  describe('when the platform keeps payments off the enrollment record', () => {
    it('says payment_visible_on_enrollment does not hold', async () => {
      const ids = await records();
      await control.setConfig({ enrollment_payments_visible: false });
      const report = await probe(ids);
      expect(resultOf(report, 'payment_visible_on_enrollment')).toEqual(['does_not_hold']);
      expect(resultOf(report, 'report_moves_updated_at')).toEqual(['holds']);
      expect(report.guard_assumptions_hold).toBe(false);
      expect(probeTable(report)).toMatch(/DO NOT HOLD: payment_visible_on_enrollment/);
    });
  });

  describe("when a report leaves the enrollment's updated_at alone", () => {
    it('says report_moves_updated_at does not hold', async () => {
      const ids = await records();
      await control.setConfig({ report_moves_updated_at: false });
      const report = await probe(ids);
      expect(resultOf(report, 'report_moves_updated_at')).toEqual(['does_not_hold']);
      expect(resultOf(report, 'payment_visible_on_enrollment')).toEqual(['holds']);
      expect(report.guard_assumptions_hold).toBe(false);
    });
  });

  describe('when a change shows only after the processing bound', () => {
    it('says max_processing_time does not hold, for the decision and the payment', async () => {
      const ids = await records();
      await control.setConfig({ write_visibility_delay_ms: BOUND_MS + 600 });
      const report = await probe(ids);
      expect(resultOf(report, 'max_processing_time')).toEqual(['does_not_hold', 'does_not_hold']);
      expect(resultOf(report, 'decision_visible_on_application')).toEqual(['holds']);
      expect(report.guard_assumptions_hold).toBe(false);
    });
  });

  describe('from the command line', () => {
    const env = () => ({
      PARTNER_API_URL: sandbox.url,
      PARTNER_MAX_PROCESSING_MS: String(BOUND_MS),
      LOG_LEVEL: 'silent',
    });

    it('refuses --write unless the base URL is declared a sandbox environment (exit 2)', async () => {
      const ids = await records();
      const result = await runCli(['probe', '--write', '--application', ids.application], {
        ...env(),
        PARTNER_ENVIRONMENT: 'production',
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/--write needs PARTNER_ENVIRONMENT=sandbox/);
      expect((await control.ledger()).writes).toEqual([]);
    });

    it('prints the table, writes the JSON and exits 1 when a guard assumption does not hold', async () => {
      const ids = await records();
      await control.setConfig({ enrollment_payments_visible: false });
      const out = join(dir, 'broken.json');
      const result = await runCli(
        ['probe', '--write', '--application', ids.application, '--enrollment', ids.enrollment, '--out', out],
        { ...env(), PARTNER_ENVIRONMENT: 'sandbox' },
      );
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(/payment visible\s+DOES NOT HOLD/);
      const report = JSON.parse(readFileSync(out, 'utf8')) as ProbeReport;
      expect(report.guard_assumptions_hold).toBe(false);
    });

    it('checks each PMS_PARTNER_KEYS key, exits 1 when one is not as configured, shows no secret', async () => {
      await records();
      await control.addRecords('applications', [{ status: 'submitted', owner_id: 'owner-beta' }]);
      await control.createKey({
        access_key: 'beta-ak',
        secret_key: 'beta-sk-cli-0123',
        owner_ids: ['owner-beta'],
      });
      await control.createKey({ access_key: 'gamma-ak', secret_key: 'gamma-sk-cli-0123' });
      const out = join(dir, 'sources.json');
      const result = await runCli(['probe', '--out', out], {
        ...env(),
        PMS_WEBHOOK_SECRETS: JSON.stringify({
          beta: ['whsec_c2VjcmV0LWJldGE='],
          gamma: ['whsec_c2VjcmV0LWdhbW1h'],
        }),
        PMS_PARTNER_KEYS: JSON.stringify({
          beta: { access_key: 'beta-ak', secret_key: 'beta-sk-cli-0123', scoped: true, read_only: false },
          // Configured read-only, but the platform lets it write: the probe must say so.
          gamma: { access_key: 'gamma-ak', secret_key: 'gamma-sk-cli-0123', read_only: true },
        }),
      });
      expect(result.code, result.stderr).toBe(1);
      const report = JSON.parse(readFileSync(out, 'utf8')) as ProbeReport;
      expect(
        report.rows.filter((r) => r.step.startsWith('source ')).map((r) => `${r.step}: ${r.result}`),
      ).toEqual([
        'source beta: key authenticates: holds',
        'source beta: key may write: holds',
        'source beta: key scoped: holds',
        'source gamma: key authenticates: holds',
        'source gamma: key read-only: does_not_hold',
      ]);
      // The exit code is the source key's doing: every guard assumption checked holds.
      expect(report.guard_assumptions_hold).toBe(true);
      expect(report.source_keys_hold).toBe(false);
      expect(result.stdout).toMatch(/PMS source key is not as configured/);
      const everything = `${result.stdout}${result.stderr}${readFileSync(out, 'utf8')}`;
      for (const secret of ['beta-sk-cli-0123', 'gamma-sk-cli-0123', 'sandbox-secret-key'])
        expect(everything).not.toContain(secret);
      expect((await control.ledger()).writes.filter((w) => w.applied)).toEqual([]);
    });
  });

  describe('when a consumer starts with a probe result that says a guard assumption does not hold', () => {
    const logger = createLogger({ level: 'silent' });
    const broken = () => {
      const file = join(dir, 'gate.json');
      writeFileSync(
        file,
        JSON.stringify({
          base_url: 'x',
          finished_at: 'y',
          rows: [
            {
              step: 'payment visible',
              guard: true,
              guard_assumption: 'payment_visible_on_enrollment',
              result: 'does_not_hold',
            },
          ],
        }),
      );
      return file;
    };

    it('refuses to start, naming the assumption', () => {
      expect(() =>
        requireProbeAssumptions({ PARTNER_PROBE_RESULT: broken(), PARTNER_PROBE_OVERRIDE: false }, logger),
      ).toThrow(/payment_visible_on_enrollment.*PARTNER_PROBE_OVERRIDE/);
    });

    it('starts when the operator overrides it explicitly', () => {
      expect(() =>
        requireProbeAssumptions({ PARTNER_PROBE_RESULT: broken(), PARTNER_PROBE_OVERRIDE: true }, logger),
      ).not.toThrow();
    });

    it('`rentbridge consumer rental-payments` exits 2', async () => {
      const result = await runCli(['consumer', 'rental-payments'], {
        PARTNER_API_URL: sandbox.url,
        PARTNER_PROBE_RESULT: broken(),
        KAFKA_BROKERS: '127.0.0.1:9',
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/guard assumption\(s\) do not hold: payment_visible_on_enrollment/);
    });
  });
});
