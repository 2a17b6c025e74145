/** The PMS source `npm start`'s demo sends as, and configures callbacks for in its own process. */
export const DEMO_PMS_SOURCE = 'demo-pms';
