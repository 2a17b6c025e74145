import type { RecordStore } from './record-store.js';
export function seedDemo(_store: RecordStore): void {}
