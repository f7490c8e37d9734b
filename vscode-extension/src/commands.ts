/**
 * Command ids and argument building (pure: no `vscode` import).
 *
 * Server-side commands (`openprogram.run`, `openprogram.resume`, `openprogram.approve`,
 * `openprogram.deny`, `openprogram.showRuns`)
 * are executed by the language server through `workspace/executeCommand`; code lenses
 * reference them directly. The extension's own palette commands have distinct ids so they
 * never collide with the ones the language client registers for the server.
 */

/** Commands the language server implements (`workspace/executeCommand`). */
export const SERVER_COMMANDS = {
  run: 'openprogram.run',
  resume: 'openprogram.resume',
  /** Approve the tool call a run awaits (`openprogram approve`), then resume it. */
  approve: 'openprogram.approve',
  /** Deny the tool call a run awaits (`openprogram deny`; the model is told), then resume it. */
  deny: 'openprogram.deny',
  showRuns: 'openprogram.showRuns',
} as const;

/** Commands the extension contributes to the palette. */
export const CLIENT_COMMANDS = {
  runEntry: 'openprogram.runEntry',
  resumeRun: 'openprogram.resumeRun',
  listRuns: 'openprogram.listRuns',
  restartServer: 'openprogram.restartServer',
  showOutput: 'openprogram.showOutput',
  refreshRuns: 'openprogram.refreshRuns',
  resumeFromView: 'openprogram.resumeFromView',
  approveFromView: 'openprogram.approveFromView',
  denyFromView: 'openprogram.denyFromView',
  cancelRun: 'openprogram.cancelRun',
  pauseRun: 'openprogram.pauseRun',
  showRunGraph: 'openprogram.showRunGraph',
  copyRunId: 'openprogram.copyRunId',
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
  if (/\s/.test(id)) {
    return 'A run id contains no spaces';
  }
  // the store's exact format (openprogram.contract.runs.is_run_id); the server refuses others
  return RUN_ID.test(id) ? undefined : `"${id}" is not a run id (16 lowercase hex digits)`;
}

const RUN_ID = /^[0-9a-f]{16}$/;

/** Options object of `openprogram.resume` (second argument; omitted when empty). */
export interface ResumeOptions {
  policy?: ResumePolicy;
  rerunUncertain?: boolean;
  /** Hand the run to the workers of this queue instead of resuming it in the editor's process. */
  queue?: string;
}

/**
 * Arguments of `openprogram.resume(run_id, options?)`: the run id, then an options object
 * `{policy?, rerunUncertain?, queue?}` with only the keys that are set.
 */
export function buildResumeArguments(runId: string, options: ResumeOptions = {}): unknown[] {
  const error = validateRunId(runId);
  if (error !== undefined) {
    throw new Error(error);
  }
  const { policy, rerunUncertain, queue } = options;
  if (policy !== undefined && !(RESUME_POLICIES as readonly string[]).includes(policy)) {
    throw new Error(`Unknown resume policy "${String(policy)}": use ${RESUME_POLICIES.join(' or ')}`);
  }
  if (queue !== undefined && queue.trim() === '') {
    throw new Error('A queue needs a name');
  }
  const sent: ResumeOptions = {};
  if (policy !== undefined) {
    sent.policy = policy;
  }
  if (rerunUncertain !== undefined) {
    sent.rerunUncertain = rerunUncertain;
  }
  if (queue !== undefined) {
    sent.queue = queue;
  }
  return Object.keys(sent).length === 0 ? [runId.trim()] : [runId.trim(), sent];
}

/**
 * Arguments of `openprogram.showRuns(uri?, function?)`: nothing lists every run of the
 * workspace, a URI the runs of that file, a URI and a function the runs of that function.
 */
export function buildShowRunsArguments(uri?: string, fn?: string): unknown[] {
  const file = uri === undefined || uri === '' ? null : uri;
  const func = fn === undefined || fn === '' ? null : fn;
  if (func !== null) {
    return [file, func];
  }
  return file === null ? [] : [file];
}

/**
 * Final arguments of a server command invoked from a lens or the palette, or undefined when
 * the user cancelled. A `▶ Run` lens carries `[uri, entry]` only: the keyword arguments are
 * asked for with `promptArgs` and appended, so the server always gets `[uri, entry, {...}]`.
 */
export async function prepareServerCommand(
  command: string,
  args: readonly unknown[],
  promptArgs: (entry: string, uri: string) => Promise<JsonObject | undefined>,
): Promise<unknown[] | undefined> {
  if (command !== SERVER_COMMANDS.run || !runNeedsArguments(args)) {
    return [...args];
  }
  const [uri, entry] = args;
  if (typeof uri !== 'string' || typeof entry !== 'string') {
    return [...args]; // malformed: let the server answer with its usage error
  }
  const typed = await promptArgs(entry, uri);
  return typed === undefined ? undefined : [uri, entry, typed];
}

/** One row of the `openprogram.showRuns` result. */
export interface RunRow {
  run_id: string;
  function?: string;
  status: string;
  paused_step?: string | null;
  error?: string | null;
  resumable?: boolean;
}

export interface RunPickItem {
  label: string;
  description: string;
  detail?: string;
  runId: string;
  resumable: boolean;
}

/** The server's showRuns rows (anything else in the result is ignored). */
export function runRows(result: unknown): RunRow[] {
  if (!Array.isArray(result)) {
    return [];
  }
  return result.filter(
    (row): row is RunRow =>
      row !== null && typeof row === 'object' && typeof (row as RunRow).run_id === 'string' && typeof (row as RunRow).status === 'string',
  );
}

/** Quick-pick items for a list of runs: resumable ones say so. */
export function runPickItems(rows: readonly RunRow[]): RunPickItem[] {
  return rows.map((row) => {
    const resumable = row.resumable === true;
    const where = typeof row.paused_step === 'string' && row.paused_step !== '' ? ` at step "${row.paused_step}"` : '';
    const detail = typeof row.error === 'string' && row.error !== '' ? row.error : resumable ? 'Select to resume' : undefined;
    const item: RunPickItem = {
      label: `${resumable ? '$(debug-pause) ' : ''}${row.run_id}`,
      description: `${row.status}${where}${row.function ? ` — ${row.function}` : ''}`,
      runId: row.run_id,
      resumable,
    };
    if (detail !== undefined) {
      item.detail = detail;
    }
    return item;
  });
}

export interface ShowRunsScope {
  label: string;
  args: unknown[];
}

/**
 * What "Show Runs" from the palette can list: with a Python file open, its runs, those of
 * each function with a `Runs (N)` lens, and all runs of the workspace; else the workspace.
 */
export function showRunsScopes(uri: string | undefined, fileName: string | undefined, lenses: readonly LensLike[] | null | undefined): ShowRunsScope[] {
  const scopes: ShowRunsScope[] = [];
  if (uri !== undefined && uri !== '') {
    scopes.push({ label: `Runs of ${fileName ?? uri}`, args: buildShowRunsArguments(uri) });
    for (const choice of runsFromLenses(lenses)) {
      scopes.push({ label: choice.title, args: choice.args });
    }
  }
  scopes.push({ label: 'All runs in the workspace', args: buildShowRunsArguments() });
  return scopes;
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
  if (record.status === 'queued' && typeof record.queue === 'string') {
    text += ` on queue "${record.queue}"`;
  }
  if (typeof record.paused_step === 'string' && record.paused_step !== '') {
    text += ` at step "${record.paused_step}"`;
  }
  if (typeof record.error === 'string' && record.error !== '') {
    text += ` — ${record.error}`;
  }
  return text;
}
