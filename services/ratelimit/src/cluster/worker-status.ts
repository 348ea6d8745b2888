// The worker-supervision messages of worker mode's IPC channel. A worker that cannot start tells
// the primary why before it exits (`rls-start-failed`); the primary sends the state of its workers
// to every worker whenever it changes (`rls-workers`), so whichever worker answers the operator
// page can show that a replacement is failing while it serves.

/** Longest reason text that crosses the channel (the worker cuts it). */
export const START_FAILURE_REASON_MAX = 500;

export interface StartFailedMessage {
  t: 'rls-start-failed';
  reason: string;
}

export function isStartFailedMessage(msg: unknown): msg is StartFailedMessage {
  return typeof msg === 'object' && msg !== null && (msg as { t?: unknown }).t === 'rls-start-failed' && typeof (msg as { reason?: unknown }).reason === 'string';
}

/** The primary's view of its workers. Times are ms since the epoch. */
export interface WorkersStatus {
  t: 'rls-workers';
  /** WORKERS. */
  wanted: number;
  /** Workers listening now. */
  serving: number;
  /** Replacements in a row that exited before listening (0 once one listens). */
  startFailures: number;
  /** When the first of those failed. */
  failingSince?: number;
  /** The last of those: when, and why (the worker's own reason, else its exit code or signal). */
  lastFailure?: { at: number; reason: string };
  /** When the next replacement is forked, while one is waiting. */
  nextStartAt?: number;
}

export function isWorkersStatus(msg: unknown): msg is WorkersStatus {
  if (typeof msg !== 'object' || msg === null) return false;
  const m = msg as Partial<Record<keyof WorkersStatus, unknown>>;
  return m.t === 'rls-workers' && typeof m.wanted === 'number' && typeof m.serving === 'number' && typeof m.startFailures === 'number';
}
