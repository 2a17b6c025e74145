import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { topicSettingsFromConfig, wantedTopic } from '../../src/kafka/topic-settings.js';

describe('topic settings', () => {
  const settings = (env: Record<string, string> = {}) => topicSettingsFromConfig(loadConfig(env));

  describe('when no replication factor is configured', () => {
    it('takes min(3, brokers) replicas and one fewer in sync', () => {
      expect(wantedTopic('commands.rental-payments', settings(), 1)).toMatchObject({
        replicationFactor: 1,
        configs: { 'min.insync.replicas': '1' },
      });
      expect(wantedTopic('commands.rental-payments', settings(), 3).configs['min.insync.replicas']).toBe('2');
      expect(wantedTopic('commands.rental-payments', settings(), 5).replicationFactor).toBe(3);
    });
  });

  describe('when configured', () => {
    it('uses the configured values, and refuses more in sync than replicas', () => {
      const s = settings({ KAFKA_REPLICATION_FACTOR: '2', KAFKA_MIN_INSYNC_REPLICAS: '2' });
      expect(wantedTopic('outcomes.enrollments', s, 5)).toMatchObject({
        replicationFactor: 2,
        configs: { 'min.insync.replicas': '2' },
      });
      expect(() => loadConfig({ KAFKA_REPLICATION_FACTOR: '1', KAFKA_MIN_INSYNC_REPLICAS: '2' })).toThrow(
        /KAFKA_MIN_INSYNC_REPLICAS/,
      );
    });
  });

  it('makes partner.* compacted changelogs and keeps the others by time', () => {
    const s = settings({
      KAFKA_CHANGELOG_MIN_COMPACTION_LAG_HOURS: '24',
      KAFKA_UNROUTED_RETENTION_HOURS: '1',
    });
    expect(wantedTopic('partner.applications', s, 1).configs).toMatchObject({
      'cleanup.policy': 'compact',
      'min.compaction.lag.ms': String(24 * 3_600_000),
      'delete.retention.ms': String(24 * 3_600_000),
      // Every copy of personal data leaves a changelog by a date: compacted at the latest after 14 days.
      'max.compaction.lag.ms': String(336 * 3_600_000),
    });
    expect(wantedTopic('inbound.unrouted', s, 1).configs).toMatchObject({
      'cleanup.policy': 'delete',
      'retention.ms': '3600000',
    });
    // Dead letters carry personal data: kept 30 days unless configured, never forever (docs/privacy.md).
    expect(wantedTopic('commands.enrollments.dlq', s, 1).configs['retention.ms']).toBe(
      String(720 * 3_600_000),
    );
    expect(
      wantedTopic('commands.enrollments.dlq', settings({ KAFKA_DLQ_RETENTION_HOURS: '2' }), 1).configs[
        'retention.ms'
      ],
    ).toBe('7200000');
    expect(() => loadConfig({ KAFKA_CHANGELOG_MAX_COMPACTION_LAG_HOURS: '24' })).toThrow(
      /KAFKA_CHANGELOG_MAX_COMPACTION_LAG_HOURS/,
    );
  });
});
