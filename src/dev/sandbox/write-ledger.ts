/**
 * One write that reached the sandbox: the ground truth for exactly-once tests. `applied` says
 * whether it changed state; `status` is what was answered (null: the connection was left
 * hanging by an `apply_then_timeout` fault).
 */
export interface LedgerEntry {
  method: string;
  path: string;
  request_id: string;
  body: unknown;
  applied: boolean;
  status: number | null;
  at: string;
}

export class WriteLedger {
  private entries: LedgerEntry[] = [];

  record(entry: Omit<LedgerEntry, 'at'>): void {
    this.entries.push({ ...entry, at: new Date().toISOString() });
  }

  list(): LedgerEntry[] {
    return [...this.entries];
  }

  clear(): void {
    this.entries = [];
  }

  /** Puts back a saved ledger (a sandbox restored across a restart). */
  load(entries: LedgerEntry[]): void {
    this.entries = [...entries];
  }

  get size(): number {
    return this.entries.length;
  }
}
