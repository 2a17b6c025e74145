import {
  applicationDecisionCommandSchema,
  COMMAND_TYPES,
  type ApplicationDecisionCommand,
} from '../events/commands.js';
import { applicationDecisionReadBack } from '../guard/index.js';
import { TOPICS } from '../kafka/topics.js';
import { createCommandConsumer, type CommandConsumerDeps, type CommandSpec } from './command-runner.js';

/** Applies application decisions (approve / decline) from commands.application-decisions. */
export const applicationDecisions: CommandSpec<ApplicationDecisionCommand> = {
  name: 'application-decisions',
  kind: 'application_decision',
  topic: TOPICS.applicationDecisions,
  outcomeTopic: TOPICS.applicationDecisionOutcomes,
  eventType: COMMAND_TYPES.applicationDecision,
  schema: applicationDecisionCommandSchema,
  commandId: (c) => c.decision_id,
  targetId: (c) => c.application_id,
  readBack: applicationDecisionReadBack,
};

export function createApplicationDecisionsConsumer(deps: CommandConsumerDeps) {
  return createCommandConsumer(applicationDecisions, deps);
}
