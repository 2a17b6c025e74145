import { notYet } from './not-yet.js';
export async function relay(): Promise<void> {
  notYet('relay', 5);
}
