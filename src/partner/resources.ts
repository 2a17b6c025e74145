/**
 * The Partner API's collections (spec 2.1), by the snake_case names used in topics
 * (`partner.<resource>`), the sandbox's control API and the poller.
 */
export const RESOURCES = [
  'customers',
  'enrollments',
  'applications',
  'application_activity_logs',
  'properties',
  'units',
  'leads',
  'listings',
  'users',
  'roles',
  'magic_links',
  'bank_accounts',
  'customer_issues',
  'billing_statements',
  'billing_activities',
] as const;

export type Resource = (typeof RESOURCES)[number];

export function isResource(value: string): value is Resource {
  return (RESOURCES as readonly string[]).includes(value);
}

/** The singular used in event types: `partner.application.updated`. */
export const SINGULAR: Record<Resource, string> = {
  customers: 'customer',
  enrollments: 'enrollment',
  applications: 'application',
  application_activity_logs: 'application_activity_log',
  properties: 'property',
  units: 'unit',
  leads: 'lead',
  listings: 'listing',
  users: 'user',
  roles: 'role',
  magic_links: 'magic_link',
  bank_accounts: 'bank_account',
  customer_issues: 'customer_issue',
  billing_statements: 'billing_statement',
  billing_activities: 'billing_activity',
};
