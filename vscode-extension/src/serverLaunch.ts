/**
 * How the language server process is started (pure Node: no `vscode` import).
 *
 * The extension and the Node integration test both use `buildServerLaunch` +
 * `probeInterpreter` + `spawnServer`, so the test exercises the real launch path.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

export const SERVER_MODULE = 'openprogram_lsp';
export const PROBE_CODE = `import ${SERVER_MODULE}`;

export interface ServerLaunch {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string | undefined;
}

export interface LaunchInputs {
  interpreter: string;
  /** Environment to start from (normally `process.env`). */
  baseEnv: NodeJS.ProcessEnv;
  /** Working directory (the first workspace folder), if any. */
  cwd?: string | undefined;
}

/**
 * The server command `[interpreter, "-m", "openprogram_lsp"]` and its environment. The
 * store setting is not exported as `OPENPROGRAM_STORE`: it reaches the server through
 * `initializationOptions` and `workspace/configuration`, so changing or clearing it later
 * takes effect (an exported one stayed the server's fallback for its whole life).
 */
export function buildServerLaunch(inputs: LaunchInputs): ServerLaunch {
  const env: NodeJS.ProcessEnv = { ...inputs.baseEnv, PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8' };
  const launch: ServerLaunch = { command: inputs.interpreter, args: ['-m', SERVER_MODULE], env };
  if (inputs.cwd !== undefined) {
    launch.cwd = inputs.cwd;
  }
  return launch;
}

/** Quote one argument for display in a shell command line (POSIX or Windows). */
export function quoteForDisplay(arg: string, platform: NodeJS.Platform = process.platform): string {
  if (/^[A-Za-z0-9_@%+=:,./\\-]+$/.test(arg)) {
    return arg;
  }
  if (platform === 'win32') {
    return `"${arg.replace(/"/g, '""')}"`;
  }
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The command a user runs to install OpenProgram into the interpreter. */
export function installCommand(interpreter: string, platform: NodeJS.Platform = process.platform): string {
  return `${quoteForDisplay(interpreter, platform)} -m pip install openprogram`;
}

export type ProbeResult =
  | { kind: 'ok' }
  | { kind: 'no-python'; message: string }
  | { kind: 'missing-package'; message: string; installCommand: string }
  | { kind: 'failed'; message: string };

/** Outcome of running `interpreter -c "import openprogram_lsp"`. */
export interface ProbeOutcome {
  /** Error code of the spawn failure (`ENOENT`, `EACCES`), when the process did not start. */
  spawnError?: string | undefined;
  exitCode: number | null;
  stderr: string;
  timedOut?: boolean;
}

/** Interpret a probe outcome as a user-facing result (one clear message per case). */
export function classifyProbe(
  interpreter: string,
  outcome: ProbeOutcome,
  platform: NodeJS.Platform = process.platform,
): ProbeResult {
  if (outcome.spawnError === 'ENOENT' || outcome.spawnError === 'EACCES') {
    const why = outcome.spawnError === 'ENOENT' ? 'was not found' : 'is not executable';
    return {
      kind: 'no-python',
      message:
        `OpenProgram: Python interpreter "${interpreter}" ${why}. ` +
        'Set "openprogram.interpreter" or select an interpreter with the Python extension.',
    };
  }
  if (outcome.timedOut) {
    return {
      kind: 'failed',
      message: `OpenProgram: "${interpreter} -c \\"${PROBE_CODE}\\"" did not finish in time; the language server was not started.`,
    };
  }
  if (outcome.spawnError !== undefined) {
    return {
      kind: 'failed',
      message: `OpenProgram: could not run "${interpreter}" (${outcome.spawnError}); the language server was not started.`,
    };
  }
  if (outcome.exitCode === 0) {
    return { kind: 'ok' };
  }
  const install = installCommand(interpreter, platform);
  if (/ModuleNotFoundError|No module named/.test(outcome.stderr)) {
    return {
      kind: 'missing-package',
      message: `OpenProgram: the interpreter "${interpreter}" does not have OpenProgram installed. Install it with: ${install}`,
      installCommand: install,
    };
  }
  const lastLine = outcome.stderr.trim().split(/\r?\n/).pop() ?? '';
  return {
    kind: 'failed',
    message:
      `OpenProgram: "${interpreter}" cannot import ${SERVER_MODULE} (exit code ${String(outcome.exitCode)})` +
      (lastLine !== '' ? `: ${lastLine}` : '') +
      `. Reinstall with: ${install}`,
  };
}

/** Run the import probe in the interpreter and classify the result. */
export function probeInterpreter(
  interpreter: string,
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 30_000,
): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(
      interpreter,
      ['-c', PROBE_CODE],
      { env, timeout: timeoutMs, windowsHide: true, encoding: 'utf8' },
      (error, _stdout, stderr) => {
        const outcome: ProbeOutcome = { exitCode: 0, stderr: String(stderr ?? '') };
        if (error) {
          const err = error as NodeJS.ErrnoException & { killed?: boolean; code?: unknown };
          if (typeof err.code === 'string') {
            outcome.spawnError = err.code;
            outcome.exitCode = null;
          } else {
            outcome.exitCode = typeof err.code === 'number' ? err.code : null;
            outcome.timedOut = err.killed === true;
          }
        }
        resolve(classifyProbe(interpreter, outcome));
      },
    );
  });
}

/** Start the server process with piped stdio (never through a shell). */
export function spawnServer(launch: ServerLaunch): ChildProcessWithoutNullStreams {
  return spawn(launch.command, launch.args, {
    env: launch.env,
    cwd: launch.cwd,
    stdio: 'pipe',
    shell: false,
    windowsHide: true,
  });
}

/** One-line description of how the server process ended. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal !== null) {
    return `the language server was killed by ${signal}`;
  }
  if (code === 0) {
    return 'the language server exited';
  }
  return `the language server exited with code ${String(code)}`;
}
