/** Why the project in `root` needs a build ('dist/ is missing', ...), or null when it needs none. */
export function whyBuild(root: string): string | null;
