import {
  applicationDecisionCommandSchema,
  COMMAND_TYPES,
  type ApplicationDecisionCommand,
} from '../events/commands.js';
import { OUTCOME_TYPES } from '../events/outcomes.js';
import { PMS_EVENT_TYPES } from '../events/pms-events.js';
import { applicationDecisionReadBack } from '../guard/index.js';
import { TOPICS } from '../kafka/topics.js';
import type { CommandType } from './command-type.js';

/** Applies application decisions (approve / decline). */
export const applicationDecisions: CommandType<ApplicationDecisionCommand> = {
  name: 'application-decisions',
  kind: 'application_decision',
  pmsEventType: PMS_EVENT_TYPES.applicationDecided,
  topic: TOPICS.applicationDecisions,
  outcomeTopic: TOPICS.applicationDecisionOutcomes,
  eventType: COMMAND_TYPES.applicationDecision,
  outcomeType: OUTCOME_TYPES.application_decision,
  schema: applicationDecisionCommandSchema,
  idField: 'decision_id',
  target: { field: 'application_id' },
  readBack: applicationDecisionReadBack,
};
