/**
 * Restart-with-backoff for a crashing language server (pure: no `vscode` import).
 *
 * Each crash within the window doubles the delay; after `maxRestarts` crashes within the
 * window the policy gives up with one message instead of looping. Crashes older than the
 * window are forgotten, and a manual restart resets the count.
 */

export interface RestartPolicyOptions {
  /** Restarts allowed within `windowMs` before giving up. */
  maxRestarts: number;
  /** Delay before the first restart. */
  baseDelayMs: number;
  /** Upper bound of the delay. */
  maxDelayMs: number;
  /** Crashes older than this no longer count. */
  windowMs: number;
}

export const DEFAULT_RESTART_OPTIONS: RestartPolicyOptions = {
  maxRestarts: 5,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  windowMs: 3 * 60_000,
};

export type RestartDecision =
  | { action: 'restart'; delayMs: number; attempt: number; message: string }
  | { action: 'give-up'; message: string };

export class RestartPolicy {
  private readonly options: RestartPolicyOptions;
  private crashes: number[] = [];

  constructor(options: Partial<RestartPolicyOptions> = {}) {
    this.options = { ...DEFAULT_RESTART_OPTIONS, ...options };
    if (!Number.isInteger(this.options.maxRestarts) || this.options.maxRestarts < 0) {
      throw new RangeError('maxRestarts must be a non-negative integer');
    }
    if (this.options.baseDelayMs < 0 || this.options.maxDelayMs < this.options.baseDelayMs) {
      throw new RangeError('delays must satisfy 0 <= baseDelayMs <= maxDelayMs');
    }
  }

  /** Crashes counted in the current window. */
  get recentCrashes(): number {
    return this.crashes.length;
  }

  /** Record a crash at `now` (ms) and decide what to do. */
  onCrash(now: number): RestartDecision {
    this.crashes = this.crashes.filter((at) => now - at < this.options.windowMs);
    this.crashes.push(now);
    const attempt = this.crashes.length;
    if (attempt > this.options.maxRestarts) {
      const minutes = Math.round(this.options.windowMs / 60_000);
      return {
        action: 'give-up',
        message:
          `The OpenProgram language server crashed ${attempt} times in the last ${minutes} minute(s) ` +
          'and will not be restarted automatically. See "OpenProgram: Show Output", fix the cause, ' +
          'then run "OpenProgram: Restart Server".',
      };
    }
    const delayMs = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (attempt - 1));
    return {
      action: 'restart',
      delayMs,
      attempt,
      message: `The OpenProgram language server stopped unexpectedly; restarting in ${delayMs} ms (attempt ${attempt} of ${this.options.maxRestarts}).`,
    };
  }

  /** Forget past crashes (after a manual restart or a settings change). */
  reset(): void {
    this.crashes = [];
  }
}
