import type { ApplicationDecisionCommand } from '../events/commands.js';
import { APPLICATION_DECISION } from '../events/command-contracts.js';
import { applicationDecisionReadBack } from '../guard/index.js';
import type { CommandType } from './command-type.js';

/** Applies application decisions (approve / decline). */
export const applicationDecisions: CommandType<ApplicationDecisionCommand> = {
  ...APPLICATION_DECISION,
  readBack: applicationDecisionReadBack,
};
