/**
 * The palette commands and their quick picks (no `vscode` import): Run Entry, Resume Run,
 * Show Runs, the Runs view's actions, and the arguments prompt of a `▶ Run` lens. What is
 * offered and sent is decided by the pure functions of `commands.ts` / `entryArgs.ts`; this
 * module runs the dialogue against `PaletteHost` (structurally `vscode.window`,
 * `context.workspaceState`, ...) and the running `ServerClient`, so unit tests drive it with
 * fakes of those APIs.
 */
import { requestQuietly, type Log, type Messages, type ServerClient, type ServerCommandRouter, type UriLike } from './clients';
import {
  SERVER_COMMANDS,
  buildResumeArguments,
  buildRunArguments,
  entriesFromLenses,
  formatCommandResult,
  parseEntryArgs,
  prepareServerCommand,
  resumesFromLenses,
  runPickItems,
  runRows,
  showRunsScopes,
  summarizeResult,
  validateEntryName,
  validateRunId,
  type JsonObject,
  type LensLike,
  type ResumeOptions,
} from './commands';
import { asProblems, asSignature, initialArgsText, rememberKey, signatureHint, validateWith, within } from './entryArgs';
import { runOf } from './runsTree';

export interface QuickPickItemLike {
  label: string;
  description?: string;
  detail?: string;
}

export interface QuickPickOptionsLike {
  title?: string;
  placeHolder?: string;
  matchOnDescription?: boolean;
}

export interface InputBoxOptionsLike {
  title?: string;
  prompt?: string;
  value?: string;
  validateInput?(value: string): string | undefined | PromiseLike<string | undefined>;
}

/** `vscode.MessageOptions`, as far as the palette sets them. */
export interface MessageOptionsLike {
  modal?: boolean;
}

/** The prompts of `vscode.window`. */
export interface Prompts extends Messages {
  showWarningMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
  /** With `{modal: true}`: a dialog, answered by the button chosen (undefined: Cancel). */
  showWarningMessage(message: string, options: MessageOptionsLike, ...items: string[]): PromiseLike<string | undefined>;
  showQuickPick<T extends QuickPickItemLike>(items: readonly T[], options: QuickPickOptionsLike): PromiseLike<T | undefined>;
  showInputBox(options: InputBoxOptionsLike): PromiseLike<string | undefined>;
  setStatusBarMessage(text: string, hideAfterTimeout: number): unknown;
}

/** A `vscode.TextDocument`, as far as the palette looks at it. */
export interface DocumentLike {
  readonly uri: UriLike;
  readonly languageId: string;
}

/** `vscode.Memento` (the workspace state). */
export interface Memory {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}

export interface PaletteHost {
  window: Prompts;
  /** `vscode.window.activeTextEditor?.document`. */
  activeDocument(): DocumentLike | undefined;
  /** `vscode.workspace.asRelativePath`. */
  relativePath(uri: UriLike): string;
  /** `vscode.env.clipboard`. */
  clipboard: { writeText(text: string): PromiseLike<void> };
  /** Remembers the arguments typed per entry (`context.workspaceState`). */
  memory: Memory;
  output: Log;
  /** The language client when its server is running. */
  client(): ServerClient | undefined;
  refreshRuns(): void;
  showGraph(runId: string): Promise<void>;
  /** How long the arguments prompt waits for the server's check (default `CHECK_ARGS_MS`). */
  checkArgsMs?: number;
  /**
   * Saves the open document of `uri` when it has unsaved changes (Run executes the file on
   * disk, and the server refuses a file whose buffer differs); false when it could not.
   */
  saveDocument?(uri: string): PromiseLike<boolean>;
}

/** After this long without the server's answer, typed arguments are accepted (the Run check still applies). */
export const CHECK_ARGS_MS = 3_000;

const RESUME_MODES: ReadonlyArray<{ label: string; options: ResumeOptions }> = [
  { label: 'Resume with the original code (keep_original)', options: { policy: 'keep_original' } },
  { label: 'Resume with the latest code (use_latest)', options: { policy: 'use_latest' } },
  { label: 'Resume and re-run the uncertain step', options: { rerunUncertain: true } },
];

/** Resume… modes of a run of `queue`: a worker of that queue resumes it (`resume --queue`). */
function workerModes(queue: string): Array<{ label: string; options: ResumeOptions }> {
  return [
    { label: `Resume on the workers of queue "${queue}"`, options: { queue } },
    { label: `Resume on the workers of queue "${queue}", re-running the uncertain step`, options: { queue, rerunUncertain: true } },
  ];
}

const ENTER_RUN_ID = '$(edit) Enter a run id…';

/**
 * The server's `openprogram/cancelRun` / `openprogram/pauseRun` answer: `cancel` / `pause` as
 * in `openprogram cancel --json` / `openprogram pause --json`. `canKill` (with `error`): the
 * run cannot stop at a safe point (its entry is not resumable); `cancelRun` with `kill: true`
 * ends its process (`openprogram cancel --kill`).
 */
interface RunActionAnswer {
  status?: string;
  cancel?: 'cancelled' | 'requested';
  pause?: 'paused' | 'requested';
  error?: string;
  canKill?: boolean;
}

export const END_PROCESS = 'End process';

const REQUESTED = 'requested';
const TOO_LATE = Symbol('too late');

export class Palette implements ServerCommandRouter {
  constructor(private readonly host: PaletteHost) {}

  /** OpenProgram: Run Entry… — pick an entry of the active file, type its arguments, run it. */
  async runEntry(): Promise<void> {
    const client = this.runningClient();
    const document = client && this.activePythonDocument('run an entry');
    if (client === undefined || document === undefined) {
      return;
    }
    const uri = client.asUri(document.uri);
    const entries = entriesFromLenses(await this.lensesFor(client, document));
    let entry: string | undefined;
    if (entries.length > 0) {
      const picked = await this.host.window.showQuickPick(
        entries.map((choice) => ({ label: choice.entry, description: choice.title })),
        { title: 'Run entry', placeHolder: 'Entry from PROGRAM_ENTRIES' },
      );
      entry = picked?.label;
    } else {
      entry = await this.host.window.showInputBox({
        title: 'Run entry',
        prompt: 'No PROGRAM_ENTRIES found in this file; type the entry name',
        validateInput: validateEntryName,
      });
    }
    if (entry === undefined) {
      return;
    }
    await this.saveBeforeRun(SERVER_COMMANDS.run, [uri]);
    const args = await this.promptEntryArgs(entry, uri);
    if (args === undefined) {
      return;
    }
    await this.executeServerCommand(SERVER_COMMANDS.run, buildRunArguments(uri, entry, args));
  }

  /** OpenProgram: Resume Run… — a paused run of the active file's `⟳ Resume` lenses, or a typed id. */
  async resumeRun(): Promise<void> {
    const client = this.runningClient();
    if (client === undefined) {
      return;
    }
    const document = this.host.activeDocument();
    const choices = document?.languageId === 'python' ? resumesFromLenses(await this.lensesFor(client, document)) : [];
    let runId: string | undefined;
    if (choices.length > 0) {
      const picked = await this.host.window.showQuickPick(
        [...choices.map((choice) => ({ label: choice.runId, description: choice.title })), { label: ENTER_RUN_ID, description: '' }],
        { title: 'Resume run', placeHolder: 'Paused run to resume' },
      );
      if (picked === undefined) {
        return;
      }
      runId = picked.label === ENTER_RUN_ID ? undefined : picked.label;
    }
    if (runId === undefined) {
      runId = await this.host.window.showInputBox({ title: 'Resume run', prompt: 'Run id', validateInput: validateRunId });
    }
    if (runId === undefined) {
      return;
    }
    await this.resumeWithMode(runId);
  }

  /** OpenProgram: Show Runs — of the active file, one of its functions, or the workspace. */
  async showRuns(): Promise<void> {
    const client = this.runningClient();
    if (client === undefined) {
      return;
    }
    const document = this.host.activeDocument();
    const isFile = document?.languageId === 'python' && document.uri.scheme === 'file';
    const uri = isFile ? client.asUri(document.uri) : undefined;
    const lenses = isFile ? await this.lensesFor(client, document) : [];
    const scopes = showRunsScopes(uri, isFile ? this.host.relativePath(document.uri) : undefined, lenses);
    let args = scopes[0]?.args ?? [];
    if (scopes.length > 1) {
      const picked = await this.host.window.showQuickPick(scopes, { title: 'Show runs', placeHolder: 'Which runs to list' });
      if (picked === undefined) {
        return;
      }
      args = picked.args;
    }
    const result = await this.executeServerCommand(SERVER_COMMANDS.showRuns, args);
    await this.pickRun(result);
  }

  /** Resume… on a Runs-view item (or a typed run id). */
  resumeFromView(node: unknown): Promise<void> {
    return this.onRun(node, (run) => this.resumeWithMode(run.id, run.queue));
  }

  /** Approve on a Runs-view item awaiting approval: `openprogram.approve(runId)`. */
  approveFromView(node: unknown): Promise<void> {
    return this.onRun(node, async (run) => {
      await this.executeServerCommand(SERVER_COMMANDS.approve, [run.id]);
    });
  }

  /** Deny on a Runs-view item awaiting approval: `openprogram.deny(runId)`. */
  denyFromView(node: unknown): Promise<void> {
    return this.onRun(node, async (run) => {
      await this.executeServerCommand(SERVER_COMMANDS.deny, [run.id]);
    });
  }

  /**
   * Cancel Run on a Runs-view item (or a typed run id). The server answers `{status, cancel}`:
   * `cancel` is `cancelled`, or `requested` when another process executes the run — it stays
   * running until that process stops at its next step, which the user is told. A run that
   * cannot stop at a safe point (`{error, canKill}`) is ended only by killing its process:
   * the user is asked (a modal warning) before the cancel is sent again with `kill: true`.
   */
  cancelRun(node: unknown): Promise<void> {
    return this.requestOnRun(node, 'openprogram/cancelRun', 'cancel', (id) => `cancel requested: the process executing run ${id} stops at its next step`);
  }

  /**
   * Pause Run on a Runs-view item (or a typed run id). The server answers `{status, pause}`:
   * `pause` is `paused`, or `requested` when another process executes the run — it stays
   * running until that process pauses it before its next step, which the user is told.
   */
  pauseRun(node: unknown): Promise<void> {
    return this.requestOnRun(node, 'openprogram/pauseRun', 'pause', (id) => `pause requested: the process executing run ${id} pauses it before its next step`);
  }

  /** Show Run Graph on a Runs-view item (or a typed run id). */
  showRunGraph(node: unknown): Promise<void> {
    return this.onRun(node, (run) => this.host.showGraph(run.id));
  }

  /** Copy Run Id on a Runs-view item (or a typed run id). */
  copyRunId(node: unknown): Promise<void> {
    return this.onRun(node, async (run) => {
      await this.host.clipboard.writeText(run.id);
      this.host.window.setStatusBarMessage(`Copied run id ${run.id}`, 3000);
    });
  }

  /** Before Run (its arguments are checked against, and it executes, the file on disk): save the file. */
  private async saveBeforeRun(command: string, args: readonly unknown[]): Promise<void> {
    const uri = args[0];
    if (command === SERVER_COMMANDS.run && typeof uri === 'string' && this.host.saveDocument !== undefined) {
      await this.host.saveDocument(uri);
    }
  }

  /** A lens command through the client's middleware: a `▶ Run` lens gets its arguments typed first. */
  async viaMiddleware(command: string, args: unknown[], next: (command: string, args: unknown[]) => PromiseLike<unknown>): Promise<unknown> {
    await this.saveBeforeRun(command, args);
    const finalArgs = await prepareServerCommand(command, args, (entry, uri) => this.promptEntryArgs(entry, uri));
    if (finalArgs === undefined) {
      return undefined;
    }
    const result: unknown = await next(command, finalArgs);
    this.reportResult(command, result);
    if (command === SERVER_COMMANDS.showRuns) {
      void this.pickRun(result);
    }
    return result;
  }

  /** A lens command the server did not declare (registered by the extension instead). */
  async viaCommand(command: string, args: unknown[]): Promise<unknown> {
    await this.saveBeforeRun(command, args);
    const finalArgs = await prepareServerCommand(command, args, (entry, uri) => this.promptEntryArgs(entry, uri));
    if (finalArgs === undefined) {
      return undefined;
    }
    const result = await this.executeServerCommand(command, finalArgs);
    if (command === SERVER_COMMANDS.showRuns) {
      void this.pickRun(result);
    }
    return result;
  }

  /**
   * Ask for the keyword arguments of `entry`, pre-filled from its signature or the last ones
   * typed; the server checks them as they are typed and the box shows its words.
   */
  async promptEntryArgs(entry: string, uri?: string): Promise<JsonObject | undefined> {
    const signature = uri !== undefined ? asSignature(await this.request('openprogram/entrySignature', { uri, entry })) : null;
    const key = uri !== undefined ? rememberKey(uri, entry) : undefined;
    const remembered = key !== undefined ? this.host.memory.get<string>(key) : undefined;
    const text = await this.host.window.showInputBox({
      title: `Run ${entry}`,
      prompt: signatureHint(signature),
      value: initialArgsText(signature, remembered),
      validateInput: validateWith((argsText) => (uri !== undefined ? this.checkArgs(uri, entry, argsText) : Promise.resolve(undefined))),
    });
    if (text === undefined) {
      return undefined;
    }
    const parsed = parseEntryArgs(text);
    if (!parsed.ok) {
      void this.host.window.showErrorMessage(parsed.error);
      return undefined;
    }
    if (key !== undefined) {
      await this.host.memory.update(key, text);
    }
    return parsed.value;
  }

  /**
   * The server's problems with these arguments (`openprogram/checkEntryArgs`), or undefined
   * when it does not answer in time or fails: the prompt never waits longer than that.
   */
  private async checkArgs(uri: string, entry: string, argsText: string): Promise<readonly string[] | undefined> {
    const ms = this.host.checkArgsMs ?? CHECK_ARGS_MS;
    const answer = await within(this.request('openprogram/checkEntryArgs', { uri, entry, args: argsText }), ms, TOO_LATE);
    if (answer === TOO_LATE) {
      this.host.output.warn(`openprogram/checkEntryArgs: no answer within ${ms} ms; the arguments are checked when the run starts`);
      return undefined;
    }
    return asProblems(answer);
  }

  /**
   * `method` (`openprogram/cancelRun` or `openprogram/pauseRun`) on the item's run: the
   * server's `{error}` is shown as is, its `{[key]: 'requested'}` as `requested(runId)`; a done
   * action shows in the Runs view, refreshed either way. A cancel refused with `canKill` is
   * sent again with `kill: true` once the user confirms it (nothing shown when declined).
   */
  private requestOnRun(node: unknown, method: string, key: 'cancel' | 'pause', requested: (runId: string) => string): Promise<void> {
    return this.onRun(node, async (run) => {
      let answer = (await this.request(method, { runId: run.id })) as RunActionAnswer | undefined;
      if (key === 'cancel' && answer?.canKill === true) {
        const choice = await this.host.window.showWarningMessage(
          `Run ${run.id} cannot stop at a safe point: its entry is not resumable. End its process?`,
          { modal: true },
          END_PROCESS,
        );
        if (choice !== END_PROCESS) {
          this.host.refreshRuns();
          return;
        }
        answer = (await this.request(method, { runId: run.id, kill: true })) as RunActionAnswer | undefined;
      }
      if (answer?.error !== undefined) {
        void this.host.window.showErrorMessage(`OpenProgram: ${answer.error}`);
      } else if (answer?.[key] === REQUESTED) {
        void this.host.window.showInformationMessage(requested(run.id));
      }
      this.host.refreshRuns();
    });
  }

  private request(method: string, params: object): Promise<unknown> {
    return requestQuietly(this.host.client(), method, params, this.host.output);
  }

  /** Run `action` on the run of a Runs-view item, or on a run id typed in the palette. */
  private async onRun(node: unknown, action: (run: { id: string; queue?: string | null }) => Promise<void> | void): Promise<void> {
    const run = runOf(node);
    if (run !== undefined) {
      await action(run);
      return;
    }
    const id = await this.host.window.showInputBox({ title: 'Run id', validateInput: validateRunId });
    if (id !== undefined) {
      await action({ id: id.trim() });
    }
  }

  private runningClient(): ServerClient | undefined {
    const client = this.host.client();
    if (client === undefined) {
      void this.host.window.showWarningMessage(
        'The OpenProgram language server is not running. See "OpenProgram: Show Output" or run "OpenProgram: Restart Server".',
      );
    }
    return client;
  }

  private activePythonDocument(purpose: string): DocumentLike | undefined {
    const document = this.host.activeDocument();
    if (document === undefined || document.languageId !== 'python') {
      void this.host.window.showInformationMessage(`Open a Python file with PROGRAM_ENTRIES to ${purpose}.`);
      return undefined;
    }
    return document;
  }

  private async lensesFor(client: ServerClient, document: DocumentLike): Promise<LensLike[]> {
    try {
      const lenses = await client.sendRequest('textDocument/codeLens', { textDocument: { uri: client.asUri(document.uri) } });
      return (lenses ?? []) as LensLike[];
    } catch (error) {
      this.host.output.warn(`Could not read code lenses: ${String(error)}`);
      return [];
    }
  }

  /** Ask how to resume `runId`, then send `openprogram.resume(runId, {policy, rerunUncertain})`. */
  /** Resume… of `runId`: the modes, and for a run of a queue the same on its workers. */
  private async resumeWithMode(runId: string, queue?: string | null): Promise<void> {
    const modes = typeof queue === 'string' && queue !== '' ? [...RESUME_MODES, ...workerModes(queue)] : RESUME_MODES;
    const mode = await this.host.window.showQuickPick(modes, { title: `Resume ${runId}` });
    if (mode === undefined) {
      return;
    }
    await this.executeServerCommand(SERVER_COMMANDS.resume, buildResumeArguments(runId, mode.options));
  }

  /** Let the user pick one of the listed runs; a resumable one is then resumed. */
  private async pickRun(result: unknown): Promise<void> {
    const items = runPickItems(runRows(result));
    if (items.length === 0) {
      return;
    }
    const picked = await this.host.window.showQuickPick(items, {
      title: `Runs (${items.length})`,
      placeHolder: 'Select a paused run to resume it; all runs are listed in the output',
      matchOnDescription: true,
    });
    if (picked?.resumable === true) {
      await this.resumeWithMode(picked.runId);
    }
  }

  private async executeServerCommand(command: string, args: unknown[]): Promise<unknown> {
    const client = this.runningClient();
    if (client === undefined) {
      return undefined;
    }
    try {
      const result: unknown = await client.sendRequest('workspace/executeCommand', { command, arguments: args });
      this.reportResult(command, result);
      return result;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.host.output.error(`${command} failed: ${message}`);
      void this.host.window.showErrorMessage(`OpenProgram: ${message}`);
      return undefined;
    }
  }

  /** Log a command result; the server itself shows the user-facing message. */
  private reportResult(command: string, result: unknown): void {
    const summary = summarizeResult(result);
    if (summary !== undefined) {
      this.host.output.info(`${command}: ${summary}`);
    }
    this.host.output.info(formatCommandResult(command, result));
  }
}
