/**
 * Command ids and argument building (pure: no `vscode` import).
 *
 * Server-side commands (`openprogram.run`, `openprogram.resume`, `openprogram.showRuns`)
 * are executed by the language server through `workspace/executeCommand`; code lenses
 * reference them directly. The extension's own palette commands have distinct ids so they
 * never collide with the ones the language client registers for the server.
 */

/** Commands the language server implements (`workspace/executeCommand`). */
export const SERVER_COMMANDS = {
  run: 'openprogram.run',
  resume: 'openprogram.resume',
  showRuns: 'openprogram.showRuns',
} as const;

/** Commands the extension contributes to the palette. */
export const CLIENT_COMMANDS = {
  runEntry: 'openprogram.runEntry',
  resumeRun: 'openprogram.resumeRun',
  listRuns: 'openprogram.listRuns',
  restartServer: 'openprogram.restartServer',
  showOutput: 'openprogram.showOutput',
} as const;

export const RESUME_POLICIES = ['keep_original', 'use_latest'] as const;
export type ResumePolicy = (typeof RESUME_POLICIES)[number];

export type JsonObject = { [key: string]: unknown };

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

function describeJson(value: unknown): string {
  if (Array.isArray(value)) {
    return 'an array';
  }
  if (value === null) {
    return 'null';
  }
  return `a ${typeof value}`;
}

/**
 * Parse the text typed for "Run entry" arguments: a JSON object of keyword arguments.
 * Empty text means `{}`. Anything else than an object is a clear one-line error.
 */
export function parseEntryArgs(text: string): ParseResult<JsonObject> {
  const trimmed = text.trim();
  if (trimmed === '') {
    return { ok: true, value: {} };
  }
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { ok: false, error: `Arguments are not valid JSON: ${detail}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return {
      ok: false,
      error: `Arguments must be a JSON object of keyword arguments like {"topic": "cats"}, got ${describeJson(value)}`,
    };
  }
  return { ok: true, value: value as JsonObject };
}

/** Validation message for the input box (undefined when the text is acceptable). */
export function validateEntryArgs(text: string): string | undefined {
  const result = parseEntryArgs(text);
  return result.ok ? undefined : result.error;
}

const ENTRY_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** Validation message for an entry name typed by hand (undefined when acceptable). */
export function validateEntryName(text: string): string | undefined {
  const name = text.trim();
  if (name === '') {
    return 'Type the name of an entry listed in PROGRAM_ENTRIES';
  }
  return ENTRY_NAME.test(name) ? undefined : `"${name}" is not a Python name (e.g. "summarize" or "Writer.draft")`;
}

/** Arguments of `openprogram.run`: document URI, entry name, JSON object of keyword args. */
export function buildRunArguments(uri: string, entry: string, args: JsonObject): [string, string, JsonObject] {
  if (uri.trim() === '') {
    throw new Error('Run entry needs a document URI');
  }
  const error = validateEntryName(entry);
  if (error !== undefined) {
    throw new Error(error);
  }
  return [uri, entry.trim(), args];
}

/** Validation message for a run id typed by hand (undefined when acceptable). */
export function validateRunId(text: string): string | undefined {
  const id = text.trim();
  if (id === '') {
    return 'Type the id of a paused run (shown by "openprogram runs --status paused")';
  }
  return /\s/.test(id) ? 'A run id contains no spaces' : undefined;
}

/** Arguments of `openprogram.resume`: run id, then the optional policy and rerun flag. */
export function buildResumeArguments(
  runId: string,
  policy?: ResumePolicy,
  rerunUncertain?: boolean,
): unknown[] {
  const error = validateRunId(runId);
  if (error !== undefined) {
    throw new Error(error);
  }
  if (policy !== undefined && !(RESUME_POLICIES as readonly string[]).includes(policy)) {
    throw new Error(`Unknown resume policy "${String(policy)}": use ${RESUME_POLICIES.join(' or ')}`);
  }
  const args: unknown[] = [runId.trim()];
  if (policy !== undefined || rerunUncertain !== undefined) {
    args.push(policy ?? null);
  }
  if (rerunUncertain !== undefined) {
    args.push(rerunUncertain);
  }
  return args;
}

/** Arguments of `openprogram.showRuns`: the document URI when there is one. */
export function buildShowRunsArguments(uri?: string): unknown[] {
  return uri === undefined || uri === '' ? [] : [uri];
}

/** Minimal shape of an LSP code lens, as returned by `textDocument/codeLens`. */
export interface LensLike {
  command?: { title?: string; command: string; arguments?: unknown[] } | null;
}

export interface EntryChoice {
  entry: string;
  uri: string;
  title: string;
}

export interface ResumeChoice {
  runId: string;
  title: string;
  args: unknown[];
}

/** Entries offered by the server's `▶ Run` lenses, in document order, without duplicates. */
export function entriesFromLenses(lenses: readonly LensLike[] | null | undefined): EntryChoice[] {
  const out: EntryChoice[] = [];
  for (const lens of lenses ?? []) {
    const command = lens.command;
    if (!command || command.command !== SERVER_COMMANDS.run) {
      continue;
    }
    const [uri, entry] = command.arguments ?? [];
    if (typeof uri !== 'string' || typeof entry !== 'string') {
      continue;
    }
    if (!out.some((choice) => choice.entry === entry)) {
      out.push({ entry, uri, title: command.title ?? entry });
    }
  }
  return out;
}

export interface RunsChoice {
  title: string;
  args: unknown[];
}

/** The server's `Runs (N)` lenses (one per resumable function with recorded runs). */
export function runsFromLenses(lenses: readonly LensLike[] | null | undefined): RunsChoice[] {
  const out: RunsChoice[] = [];
  for (const lens of lenses ?? []) {
    const command = lens.command;
    if (!command || command.command !== SERVER_COMMANDS.showRuns) {
      continue;
    }
    const args = [...(command.arguments ?? [])];
    const detail = args.slice(1).filter((arg): arg is string => typeof arg === 'string').join(' ');
    out.push({ title: detail !== '' ? `${command.title ?? 'Runs'} — ${detail}` : command.title ?? 'Runs', args });
  }
  return out;
}

/** Paused runs offered by the server's `⟳ Resume` lenses. */
export function resumesFromLenses(lenses: readonly LensLike[] | null | undefined): ResumeChoice[] {
  const out: ResumeChoice[] = [];
  for (const lens of lenses ?? []) {
    const command = lens.command;
    if (!command || command.command !== SERVER_COMMANDS.resume) {
      continue;
    }
    const args = command.arguments ?? [];
    const runId = args[0];
    if (typeof runId !== 'string' || out.some((choice) => choice.runId === runId)) {
      continue;
    }
    out.push({ runId, title: command.title ?? runId, args: [...args] });
  }
  return out;
}

/**
 * True when a `openprogram.run` invocation (e.g. from a lens) still needs the user to
 * type the keyword arguments: the lens gave only the URI and entry name.
 */
export function runNeedsArguments(args: readonly unknown[]): boolean {
  return args.length < 3 || args[2] === undefined || args[2] === null;
}

/** Text for the output channel from a command result of any shape. */
export function formatCommandResult(command: string, result: unknown): string {
  if (result === undefined || result === null) {
    return `${command}: done`;
  }
  if (typeof result === 'string') {
    return result;
  }
  return `${command} result:\n${JSON.stringify(result, null, 2)}`;
}

/**
 * Short notification text for a run/resume result shaped like the CLI's `--json` output
 * (`{"run_id", "status", "result" | "error", "paused_step"?}`); undefined for other shapes.
 */
export function summarizeResult(result: unknown): string | undefined {
  if (result === null || typeof result !== 'object' || Array.isArray(result)) {
    return undefined;
  }
  const record = result as Record<string, unknown>;
  if (typeof record.status !== 'string') {
    return undefined;
  }
  const run = typeof record.run_id === 'string' ? `Run ${record.run_id}` : 'Run';
  let text = `${run}: ${record.status}`;
  if (typeof record.paused_step === 'string' && record.paused_step !== '') {
    text += ` at step "${record.paused_step}"`;
  }
  if (typeof record.error === 'string' && record.error !== '') {
    text += ` — ${record.error}`;
  }
  return text;
}
