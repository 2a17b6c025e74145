import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Runs each rentbridge role as its own OS process (`node --import tsx src/cli/main.ts <args>`),
 * like a process supervisor would: a process that exits on its own is counted and restarted;
 * one the chaos run kills is restarted when the run says so. Each child leads its own process
 * group, so stopping it also stops anything it started.
 */
export interface RoleSpec {
  /** Unique name, used for the log file: test-artifacts/chaos/<name>.log. */
  name: string;
  args: string[];
  env: Record<string, string>;
}

export interface UnexpectedExit {
  name: string;
  code: number | null;
  signal: string | null;
  at: number;
}

interface Slot {
  spec: RoleSpec;
  child: ChildProcess | null;
  /** Set while the run itself stops or kills the process: its exit is not a crash. */
  expectingExit: boolean;
  starts: number;
}

export interface Supervisor {
  start(spec: RoleSpec): void;
  /** SIGKILL the role's process group now; it stays down until `restart`. */
  kill(name: string): number | null;
  restart(name: string): void;
  names(): string[];
  isRunning(name: string): boolean;
  unexpectedExits(): UnexpectedExit[];
  /** Every pid this supervisor ever started (for the final "nothing left running" check). */
  allPids(): number[];
  /** SIGTERM every group, then SIGKILL what is left after `graceMs`. */
  stopAll(graceMs?: number): Promise<void>;
}

export function createSupervisor(options: { repoRoot: string; logDir: string }): Supervisor {
  const slots = new Map<string, Slot>();
  const exits: UnexpectedExit[] = [];
  const pids: number[] = [];
  let stopping = false;

  const spawnSlot = (slot: Slot) => {
    const logPath = join(options.logDir, `${slot.spec.name}.log`);
    const fd = openSync(logPath, 'a');
    slot.starts += 1;
    writeSync(
      fd,
      `\n=== chaos: start #${slot.starts} of ${slot.spec.name} at ${new Date().toISOString()} ===\n`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...slot.spec.args], {
      cwd: options.repoRoot,
      env: { ...process.env, ...slot.spec.env },
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    closeSync(fd);
    if (child.pid) pids.push(child.pid);
    slot.child = child;
    slot.expectingExit = false;
    child.once('exit', (code, signal) => {
      if (slot.child !== child) return;
      slot.child = null;
      if (slot.expectingExit || stopping) return;
      // Exited on its own: a crash as far as the run is concerned. Restart it, as a supervisor would.
      exits.push({ name: slot.spec.name, code, signal, at: Date.now() });
      setTimeout(() => {
        if (!stopping && slot.child === null) spawnSlot(slot);
      }, 1000).unref();
    });
  };

  const signalGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
    if (!child.pid) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };

  return {
    start(spec) {
      const slot: Slot = { spec, child: null, expectingExit: false, starts: 0 };
      slots.set(spec.name, slot);
      spawnSlot(slot);
    },
    kill(name) {
      const slot = slots.get(name);
      if (!slot?.child) return null;
      slot.expectingExit = true;
      const pid = slot.child.pid ?? null;
      signalGroup(slot.child, 'SIGKILL');
      return pid;
    },
    restart(name) {
      const slot = slots.get(name);
      if (!slot || stopping) return;
      if (slot.child) return;
      spawnSlot(slot);
    },
    names: () => [...slots.keys()],
    isRunning: (name) => slots.get(name)?.child != null,
    unexpectedExits: () => [...exits],
    allPids: () => [...pids],
    async stopAll(graceMs = 8000) {
      stopping = true;
      const live = [...slots.values()].flatMap((s) => (s.child ? [s.child] : []));
      for (const slot of slots.values()) slot.expectingExit = true;
      const exited = live.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
          }),
      );
      for (const child of live) signalGroup(child, 'SIGTERM');
      const timer = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
      await Promise.race([Promise.all(exited), timer]);
      // Anything still there (or any grandchild left in a group) is killed outright.
      for (const child of live) signalGroup(child, 'SIGKILL');
      await Promise.race([Promise.all(exited), new Promise((r) => setTimeout(r, 2000).unref())]);
    },
  };
}

/** True when a process with this pid still exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
