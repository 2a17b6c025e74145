import type { ApplicationDecisionCommand } from '../../contracts/commands.js';
import { APPLICATION_DECISION } from '../../contracts/command-contracts.js';
import { applicationDecisionReadBack } from './application-decision-read-back.js';
import type { CommandType } from '../command-type.js';

/** Applies application decisions (approve / decline). */
export const applicationDecisions: CommandType<ApplicationDecisionCommand> = {
  ...APPLICATION_DECISION,
  readBack: applicationDecisionReadBack,
};
