import { notYet } from './not-yet.js';
export async function sandbox(_opts: { port: number; seed?: string }): Promise<void> {
  notYet('sandbox', 3);
}
