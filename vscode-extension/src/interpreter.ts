/**
 * Which Python interpreter starts the language server (pure: no `vscode` import).
 *
 * Order: the `openprogram.interpreter` setting, else the Python extension's active
 * environment when that extension is installed, else `python3` (`python` on Windows).
 */
import * as os from 'node:os';
import * as path from 'node:path';

export type InterpreterSource = 'setting' | 'python-extension' | 'default';

export interface InterpreterInputs {
  /** Raw value of the `openprogram.interpreter` setting ('' or undefined when unset). */
  setting?: string | undefined;
  /** Executable reported by the Python extension's active environment, if any. */
  pythonExtensionPath?: string | undefined;
  /** First workspace folder (fsPath), used for `${workspaceFolder}` and relative paths. */
  workspaceFolder?: string | undefined;
  /** `process.platform`; decides the default name. */
  platform?: NodeJS.Platform;
  /** Home directory used to expand `~`; defaults to `os.homedir()`. */
  homeDir?: string;
}

export interface ResolvedInterpreter {
  /** Command to run: an absolute path, or a bare name looked up on PATH. */
  command: string;
  source: InterpreterSource;
}

/** The bare interpreter name used when nothing else is configured. */
export function defaultInterpreter(platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? 'python' : 'python3';
}

/**
 * Expand `${workspaceFolder}`, `${userHome}` and a leading `~`; make paths with a
 * directory separator absolute against the workspace folder. Bare names stay bare.
 */
export function expandPath(
  value: string,
  workspaceFolder: string | undefined,
  homeDir: string = os.homedir(),
): string {
  let out = value.trim();
  if (out === '') {
    return out;
  }
  if (workspaceFolder !== undefined) {
    out = out.split('${workspaceFolder}').join(workspaceFolder);
  }
  out = out.split('${userHome}').join(homeDir);
  if (out === '~') {
    out = homeDir;
  } else if (out.startsWith('~/') || out.startsWith('~\\')) {
    out = path.join(homeDir, out.slice(2));
  }
  const hasSeparator = out.includes('/') || out.includes('\\');
  if (hasSeparator && !path.isAbsolute(out) && workspaceFolder !== undefined) {
    out = path.resolve(workspaceFolder, out);
  }
  return out;
}

/** Resolve the interpreter from the inputs, in the documented order. */
export function resolveInterpreter(inputs: InterpreterInputs): ResolvedInterpreter {
  const home = inputs.homeDir ?? os.homedir();
  const setting = (inputs.setting ?? '').trim();
  if (setting !== '') {
    return { command: expandPath(setting, inputs.workspaceFolder, home), source: 'setting' };
  }
  const fromExtension = (inputs.pythonExtensionPath ?? '').trim();
  if (fromExtension !== '') {
    return {
      command: expandPath(fromExtension, inputs.workspaceFolder, home),
      source: 'python-extension',
    };
  }
  return { command: defaultInterpreter(inputs.platform), source: 'default' };
}

/** Human-readable description, e.g. for the status bar tooltip and logs. */
export function describeInterpreter(resolved: ResolvedInterpreter): string {
  switch (resolved.source) {
    case 'setting':
      return `${resolved.command} (from the openprogram.interpreter setting)`;
    case 'python-extension':
      return `${resolved.command} (the Python extension's active environment)`;
    case 'default':
      return `${resolved.command} (default: no interpreter configured)`;
  }
}

/**
 * The part of the Python extension's `environments` API used here (`ms-python.python`).
 * `Resource` is whatever identifies a workspace folder to it (a `vscode.Uri`).
 */
export interface PythonEnvironments<Resource = unknown> {
  getActiveEnvironmentPath(resource?: Resource): { id: string; path: string } | undefined;
  resolveEnvironment?(
    env: { id: string; path: string } | string,
  ): Promise<{ executable?: { uri?: { fsPath: string } } } | undefined>;
}

/**
 * The executable of the Python extension's active environment for `resource` (a workspace
 * folder), resolved to the interpreter file when the extension can; undefined when it has
 * none or fails (`warn` gets the reason).
 */
export async function activeEnvironmentExecutable<Resource>(
  environments: PythonEnvironments<Resource> | undefined,
  resource: Resource | undefined,
  warn: (message: string) => void = () => undefined,
): Promise<string | undefined> {
  if (environments === undefined) {
    return undefined;
  }
  try {
    const active = environments.getActiveEnvironmentPath(resource);
    if (active === undefined) {
      return undefined;
    }
    if (environments.resolveEnvironment !== undefined) {
      const resolved = await environments.resolveEnvironment(active);
      const executable = resolved?.executable?.uri?.fsPath;
      if (executable !== undefined && executable !== '') {
        return executable;
      }
    }
    return active.path === '' ? undefined : active.path;
  } catch (error) {
    warn(`Could not ask the Python extension for its environment: ${String(error)}`);
    return undefined;
  }
}

/**
 * The interpreter of one workspace folder: its `openprogram.interpreter` setting, else the
 * Python extension's environment for that folder, else the default.
 */
export async function discoverInterpreter<Resource>(inputs: {
  setting: string;
  folder: { path: string; resource: Resource } | undefined;
  environments: PythonEnvironments<Resource> | undefined;
  warn?: (message: string) => void;
  platform?: NodeJS.Platform;
  homeDir?: string;
}): Promise<ResolvedInterpreter> {
  const fromExtension =
    inputs.setting.trim() === ''
      ? await activeEnvironmentExecutable(inputs.environments, inputs.folder?.resource, inputs.warn)
      : undefined;
  return resolveInterpreter({
    setting: inputs.setting,
    pythonExtensionPath: fromExtension,
    workspaceFolder: inputs.folder?.path,
    platform: inputs.platform,
    homeDir: inputs.homeDir,
  });
}

/** The interpreter to hand to the server for runs: only one the user or the Python extension chose. */
export function chosenInterpreter(resolved: ResolvedInterpreter | undefined): string | undefined {
  return resolved !== undefined && resolved.source !== 'default' ? resolved.command : undefined;
}
