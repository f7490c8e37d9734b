/**
 * VS Code glue: starts `python -m openprogram_lsp` with the right interpreter, keeps it
 * running (restart with backoff), and offers the Run / Resume / Show runs commands.
 * All decisions live in the pure modules beside this file; this one only wires them up.
 */
import * as vscode from 'vscode';
import {
  CloseAction,
  CodeLensRequest,
  ErrorAction,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  ShowMessageNotification,
  RevealOutputChannelOn,
  State,
  Trace,
  type LanguageClientOptions,
} from 'vscode-languageclient/node';
import type { ChildProcess } from 'node:child_process';

import {
  CLIENT_COMMANDS,
  SERVER_COMMANDS,
  buildResumeArguments,
  buildRunArguments,
  entriesFromLenses,
  formatCommandResult,
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
import { asSignature, checkEntryArgs, initialArgsText, rememberKey, signatureHint, validateAgainst } from './entryArgs';
import { GraphPanels } from './graphPanel';
import { chosenInterpreter, describeInterpreter, discoverInterpreter, type PythonEnvironments, type ResolvedInterpreter } from './interpreter';
import { shouldNotify, type MessageType } from './notifications';
import { RUNS_VIEW_ID, RunsProvider, runOf } from './runsView';
import { RestartPolicy } from './restartPolicy';
import { buildServerLaunch, probeInterpreter, spawnServer } from './serverLaunch';
import {
  SECTION,
  answerConfiguration,
  classifyChange,
  readSettings,
  toInitializationOptions,
  toServerConfiguration,
  type ServerConfiguration,
  type Settings,
} from './settings';
import { statusView, type ServerState } from './status';

const PYTHON_EXTENSION_ID = 'ms-python.python';

/**
 * A language client that logs its own errors instead of popping one notification per
 * failure: crashes and failed starts are reported by the controller, once, with actions.
 */
class QuietLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | 'force'): void {
    super.error(message, data, false);
  }
}

/** The part of the Python extension's API this extension uses. */
interface PythonExtensionApi {
  environments?: PythonEnvironments<vscode.Uri> & { onDidChangeActiveEnvironmentPath?: vscode.Event<unknown> };
}

class ServerController implements vscode.Disposable {
  private readonly output: vscode.LogOutputChannel;
  private readonly status: vscode.LanguageStatusItem;
  private readonly runs: RunsProvider;
  private readonly graphs: GraphPanels;
  private readonly policy = new RestartPolicy();
  private readonly disposables: vscode.Disposable[] = [];
  private client: LanguageClient | undefined;
  private clientDisposables: vscode.Disposable[] = [];
  private serverProcess: ChildProcess | undefined;
  private generation = 0;
  private queue: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | undefined;
  private settings: Settings;
  private interpreter: ResolvedInterpreter | undefined;
  private lastNotice = '';
  private pythonApi: PythonExtensionApi | undefined;
  private disposed = false;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('OpenProgram', { log: true });
    // Scoped to Python documents, like ruff-vscode: no global status-bar item.
    this.status = vscode.languages.createLanguageStatusItem(SECTION, { language: 'python' });
    this.status.name = 'OpenProgram';
    this.status.command = { title: 'Show Output', command: CLIENT_COMMANDS.showOutput };
    this.settings = this.loadSettings();
    const request = (method: string, params: object) => this.serverRequest(method, params);
    this.runs = new RunsProvider(request);
    this.graphs = new GraphPanels(context.extensionUri, request);
    this.disposables.push(this.output, this.status, this.runs, this.graphs);
  }

  /** A custom request to the running server; undefined (logged) when it is not running or fails. */
  private async serverRequest(method: string, params: object): Promise<unknown> {
    const client = this.client;
    if (client === undefined || client.state !== State.Running) {
      return undefined;
    }
    try {
      return await client.sendRequest(method, params);
    } catch (error) {
      this.output.warn(`${method} failed: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  }

  // ---------------------------------------------------------------- lifecycle

  async activate(): Promise<void> {
    const register = (id: string, fn: (...args: unknown[]) => unknown): void => {
      this.disposables.push(vscode.commands.registerCommand(id, fn));
    };
    register(CLIENT_COMMANDS.runEntry, () => this.runEntry());
    register(CLIENT_COMMANDS.resumeRun, () => this.resumeRun());
    register(CLIENT_COMMANDS.listRuns, () => this.showRuns());
    register(CLIENT_COMMANDS.restartServer, () => this.restart('restart requested', true));
    register(CLIENT_COMMANDS.showOutput, () => this.output.show(true));
    register(CLIENT_COMMANDS.refreshRuns, () => this.runs.refresh());
    register(CLIENT_COMMANDS.resumeFromView, (node) => this.onRun(node, (run) => this.resumeWithMode(run.id)));
    register(CLIENT_COMMANDS.cancelRun, (node) => this.onRun(node, (run) => this.cancelRun(run.id)));
    register(CLIENT_COMMANDS.showRunGraph, (node) => this.onRun(node, (run) => this.graphs.show(run.id)));
    register(CLIENT_COMMANDS.copyRunId, (node) =>
      this.onRun(node, async (run) => {
        await vscode.env.clipboard.writeText(run.id);
        vscode.window.setStatusBarMessage(`Copied run id ${run.id}`, 3000);
      }),
    );
    this.disposables.push(vscode.window.registerTreeDataProvider(RUNS_VIEW_ID, this.runs));

    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration(SECTION)) {
          const folders = vscode.workspace.workspaceFolders ?? [];
          this.onSettingsChanged(folders.some((folder) => event.affectsConfiguration(SECTION, folder.uri)));
        }
      }),
      // The client sends workspace/didChangeWorkspaceFolders; the server serves the new
      // folders (settings, store) without a restart and says when the runs changed.
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.runs.refresh()),
    );
    await this.hookPythonExtension();
    this.enqueue(() => this.startServer());
  }

  dispose(): Promise<void> {
    this.disposed = true;
    this.cancelPendingRestart();
    const done = this.enqueue(() => this.stopServer());
    return done.finally(() => {
      for (const disposable of this.disposables.splice(0)) {
        disposable.dispose();
      }
    });
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(task).catch((error: unknown) => {
      this.output.error(`OpenProgram: ${error instanceof Error ? error.message : String(error)}`);
    });
    return this.queue;
  }

  private setState(state: ServerState, detail = ''): void {
    const view = statusView(state, detail);
    this.status.text = view.text;
    this.status.detail = view.tooltip;
    this.status.busy = state === 'starting' || state === 'restarting';
    this.status.severity = view.error ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
  }

  /** Run `action` on the run of a Runs-view item, or one picked from the palette. */
  private async onRun(node: unknown, action: (run: { id: string }) => Promise<void> | void): Promise<void> {
    const run = runOf(node);
    if (run !== undefined) {
      await action(run);
      return;
    }
    const id = await vscode.window.showInputBox({ title: 'Run id', validateInput: validateRunId });
    if (id !== undefined) {
      await action({ id: id.trim() });
    }
  }

  private async cancelRun(runId: string): Promise<void> {
    const answer = (await this.serverRequest('openprogram/cancelRun', { runId })) as { status?: string; error?: string } | undefined;
    if (answer?.error !== undefined) {
      void vscode.window.showErrorMessage(`OpenProgram: ${answer.error}`);
    }
    this.runs.refresh();
  }

  /** A server `window/showMessage`: always logged, shown as configured by showNotifications. */
  private onServerMessage(type: MessageType, message: string): void {
    this.output.info(message);
    if (!shouldNotify(this.settings.showNotifications, type, message)) {
      return;
    }
    if (type === 1) {
      void vscode.window.showErrorMessage(message);
    } else if (type === 2) {
      void vscode.window.showWarningMessage(message);
    } else {
      void vscode.window.showInformationMessage(message);
    }
  }

  /** The folder the server process starts in (the first one); each folder is served. */
  private workspaceFolder(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  /** The window's settings, or a workspace folder's own (resource-scoped) settings. */
  private loadSettings(folder?: vscode.Uri): Settings {
    const config = vscode.workspace.getConfiguration(SECTION, folder);
    const { settings, problems } = readSettings((key) => config.get(key));
    for (const problem of problems) {
      this.output.warn(folder !== undefined ? `${folder.fsPath}: ${problem}` : problem);
    }
    return settings;
  }

  /** What the server gets for one `workspace/configuration` scope (a folder, or the window). */
  private async configurationFor(scopeUri: string | undefined): Promise<ServerConfiguration> {
    const folder = scopeUri !== undefined ? vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(scopeUri)) : undefined;
    if (folder === undefined) {
      return this.serverConfiguration();
    }
    const settings = this.loadSettings(folder.uri);
    const interpreter = await discoverInterpreter({
      setting: settings.interpreter,
      folder: { path: folder.uri.fsPath, resource: folder.uri },
      environments: this.pythonApi?.environments,
      warn: (message) => this.output.warn(message),
    });
    return toServerConfiguration(settings, chosenInterpreter(interpreter), folder.uri.fsPath);
  }

  private async hookPythonExtension(): Promise<void> {
    const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
    if (extension === undefined) {
      return;
    }
    try {
      this.pythonApi = extension.isActive ? extension.exports : await extension.activate();
    } catch (error) {
      this.output.warn(`Python extension could not be activated: ${String(error)}`);
      return;
    }
    const onChange = this.pythonApi?.environments?.onDidChangeActiveEnvironmentPath;
    if (onChange !== undefined) {
      this.disposables.push(
        onChange(() => {
          if (this.settings.interpreter === '') {
            void this.resolveCurrentInterpreter().then((next) => {
              if (next.command !== this.interpreter?.command) {
                this.restart(`Python environment changed to ${next.command}`, true);
              }
            });
          }
        }),
      );
    }
  }

  /** The interpreter that starts the server: the first folder's (or the window's). */
  private async resolveCurrentInterpreter(): Promise<ResolvedInterpreter> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    return discoverInterpreter({
      setting: this.settings.interpreter,
      folder: folder !== undefined ? { path: folder.uri.fsPath, resource: folder.uri } : undefined,
      environments: this.pythonApi?.environments,
      warn: (message) => this.output.warn(message),
    });
  }

  /** The interpreter the server should use for runs: only one the user or Python extension chose. */
  private configuredInterpreter(): string | undefined {
    return chosenInterpreter(this.interpreter);
  }

  private serverConfiguration(): ServerConfiguration {
    return toServerConfiguration(this.settings, this.configuredInterpreter(), this.workspaceFolder());
  }

  /** `inFolder`: the change may be a workspace folder's own value (the server pulls those). */
  private onSettingsChanged(inFolder: boolean): void {
    const before = this.settings;
    this.settings = this.loadSettings();
    const change = classifyChange(before, this.settings);
    if (change.restart) {
      this.restart('interpreter changed', true);
      return;
    }
    const client = this.client;
    if (client === undefined || client.state !== State.Running) {
      return;
    }
    if (change.configuration || inFolder) {
      // The running server takes new lint/store settings without a restart (like ruff-vscode)
      // and pulls each folder's own values (workspace/configuration with a scopeUri).
      void client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: { [SECTION]: this.serverConfiguration() },
      });
      this.runs.refresh();
    }
    if (change.trace) {
      void client.setTrace(Trace.fromString(this.settings.trace));
    }
  }

  private restart(reason: string, manual: boolean): void {
    if (this.disposed) {
      return;
    }
    this.cancelPendingRestart();
    if (manual) {
      this.policy.reset();
      this.lastNotice = '';
    }
    this.output.info(`Restarting the language server: ${reason}`);
    this.setState('restarting', reason);
    void this.enqueue(async () => {
      await this.stopServer();
      await this.startServer();
    });
  }

  private cancelPendingRestart(): void {
    if (this.restartTimer !== undefined) {
      clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
    }
  }

  private async startServer(): Promise<void> {
    if (this.disposed) {
      return;
    }
    this.setState('starting');
    this.interpreter = await this.resolveCurrentInterpreter();
    const interpreterText = describeInterpreter(this.interpreter);
    this.output.info(`Interpreter: ${interpreterText}`);
    const config = this.serverConfiguration();
    const launch = buildServerLaunch({
      interpreter: this.interpreter.command,
      baseEnv: process.env,
      cwd: this.workspaceFolder(),
      store: config.store,
    });

    const probe = await probeInterpreter(launch.command, launch.env);
    if (probe.kind !== 'ok') {
      this.setState(probe.kind === 'failed' ? 'failed' : 'not-installed', probe.message);
      this.output.error(probe.message);
      await this.notifyProbeFailure(probe.message, probe.kind === 'missing-package' ? probe.installCommand : undefined);
      return;
    }

    const generation = ++this.generation;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
      ],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationFailedHandler: () => false,
      initializationOptions: toInitializationOptions(this.settings, this.configuredInterpreter(), this.workspaceFolder()),
      synchronize: {
        fileEvents: vscode.workspace.createFileSystemWatcher('**/pyproject.toml'),
      },
      errorHandler: {
        error: (_error, _message, count) => ({
          action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        closed: () => ({
          action: CloseAction.DoNotRestart,
          handled: true,
          message: this.onServerClosed(generation),
        }),
      },
      middleware: {
        workspace: {
          configuration: (params) => answerConfiguration(params.items, (scopeUri) => this.configurationFor(scopeUri)),
        },
        // Lenses carry the server's command ids; the client registers them and routes every
        // invocation through here: a `▶ Run` lens gets its keyword arguments typed first.
        executeCommand: async (command, args, next) => {
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
        },
      },
    };

    const client = new QuietLanguageClient(SECTION, 'OpenProgram', async () => {
      const child = spawnServer(launch);
      this.serverProcess = child;
      return child;
    }, clientOptions);
    this.client = client;
    this.clientDisposables.push(
      client.onDidChangeState((event) => {
        if (generation !== this.generation) {
          return;
        }
        if (event.newState === State.Running) {
          this.setState('running', interpreterText);
        } else if (event.newState === State.Starting) {
          this.setState('starting', interpreterText);
        }
      }),
    );
    // Not awaited inside the queue: a server that hangs in `initialize` must not block a
    // manual restart or a settings change queued after it.
    void client.start().then(
      async () => {
        if (generation !== this.generation) {
          return;
        }
        await client.setTrace(Trace.fromString(this.settings.trace));
        this.registerMissingServerCommands(client);
        this.clientDisposables.push(
          client.onNotification('openprogram/runsChanged', () => {
            this.runs.refresh();
            void this.graphs.refresh();
          }),
          client.onNotification(ShowMessageNotification.type, (params) => this.onServerMessage(params.type as MessageType, params.message)),
        );
        this.runs.refresh();
        this.output.info(`Language server started (${interpreterText})`);
      },
      async (error: unknown) => {
        // If the process died, the close handler and the restart policy take over.
        await exitedWithin(this.serverProcess, 2_000);
        if (generation !== this.generation) {
          return;
        }
        const message = `The OpenProgram language server failed to start: ${error instanceof Error ? error.message : String(error)}`;
        this.output.error(message);
        // A crash during start is handled by the restart policy; anything else is reported once.
        if (client.state !== State.Running && this.restartTimer === undefined && this.policy.recentCrashes === 0) {
          this.setState('failed', message);
          void this.notifyOnce(message);
        }
      },
    );
  }

  /** Lenses reference the server's command ids; make them callable even if the server does not list them. */
  private registerMissingServerCommands(client: LanguageClient): void {
    const declared = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    for (const id of Object.values(SERVER_COMMANDS)) {
      if (declared.includes(id)) {
        continue;
      }
      this.clientDisposables.push(
        vscode.commands.registerCommand(id, async (...args: unknown[]) => {
          const finalArgs = await prepareServerCommand(id, args, (entry, uri) => this.promptEntryArgs(entry, uri));
          if (finalArgs === undefined) {
            return undefined;
          }
          const result = await this.executeServerCommand(id, finalArgs);
          if (id === SERVER_COMMANDS.showRuns) {
            void this.pickRun(result);
          }
          return result;
        }),
      );
    }
  }

  /** Decide on restart after the connection closed; returns the line for the log. */
  private onServerClosed(generation: number): string {
    if (generation !== this.generation || this.disposed) {
      return 'Connection to the language server closed.';
    }
    const decision = this.policy.onCrash(Date.now());
    if (decision.action === 'give-up') {
      this.setState('failed', decision.message);
      this.output.error(decision.message);
      void vscode.window
        .showErrorMessage(decision.message, 'Show Output', 'Restart Server')
        .then((choice) => {
          if (choice === 'Show Output') {
            this.output.show(true);
          } else if (choice === 'Restart Server') {
            this.restart('restart requested', true);
          }
        });
      return 'Connection to the language server closed; not restarting.';
    }
    this.setState('restarting', decision.message);
    this.cancelPendingRestart();
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (generation === this.generation) {
        this.restart(`crash recovery, attempt ${decision.attempt}`, false);
      }
    }, decision.delayMs);
    return decision.message;
  }

  private async stopServer(): Promise<void> {
    this.generation++;
    const client = this.client;
    const child = this.serverProcess;
    this.client = undefined;
    this.serverProcess = undefined;
    for (const disposable of this.clientDisposables.splice(0)) {
      disposable.dispose();
    }
    if (client !== undefined) {
      try {
        if (client.state === State.Running) {
          await client.stop(2000);
        }
      } catch (error) {
        this.output.warn(`Stopping the language server: ${String(error)}`);
      }
    }
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill();
    }
    this.setState('stopped');
  }

  private async notifyOnce(message: string): Promise<void> {
    if (message === this.lastNotice) {
      return;
    }
    this.lastNotice = message;
    const choice = await vscode.window.showErrorMessage(message, 'Show Output', 'Restart Server');
    if (choice === 'Show Output') {
      this.output.show(true);
    } else if (choice === 'Restart Server') {
      this.restart('restart requested', true);
    }
  }

  private async notifyProbeFailure(message: string, install: string | undefined): Promise<void> {
    if (message === this.lastNotice) {
      return; // no notification loops: the same problem is reported once until it changes
    }
    this.lastNotice = message;
    const actions = install !== undefined ? ['Install', 'Select Interpreter', 'Open Settings'] : ['Select Interpreter', 'Open Settings'];
    const choice = await vscode.window.showErrorMessage(message, ...actions);
    if (choice === 'Install' && install !== undefined) {
      const terminal = vscode.window.createTerminal('OpenProgram install');
      terminal.show();
      terminal.sendText(install);
      void vscode.window.showInformationMessage('When the install has finished, run "OpenProgram: Restart Server".', 'Restart Server').then((next) => {
        if (next === 'Restart Server') {
          this.restart('restart requested', true);
        }
      });
    } else if (choice === 'Select Interpreter') {
      if (this.pythonApi !== undefined) {
        await vscode.commands.executeCommand('python.setInterpreter');
      } else {
        await vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.interpreter`);
      }
    } else if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', SECTION);
    }
  }

  // ---------------------------------------------------------------- commands

  private runningClient(): LanguageClient | undefined {
    if (this.client !== undefined && this.client.state === State.Running) {
      return this.client;
    }
    void vscode.window.showWarningMessage(
      'The OpenProgram language server is not running. See "OpenProgram: Show Output" or run "OpenProgram: Restart Server".',
    );
    return undefined;
  }

  private activePythonDocument(purpose: string): vscode.TextDocument | undefined {
    const document = vscode.window.activeTextEditor?.document;
    if (document === undefined || document.languageId !== 'python') {
      void vscode.window.showInformationMessage(`Open a Python file with PROGRAM_ENTRIES to ${purpose}.`);
      return undefined;
    }
    return document;
  }

  private async lensesFor(client: LanguageClient, document: vscode.TextDocument): Promise<LensLike[]> {
    try {
      const uri = client.code2ProtocolConverter.asUri(document.uri);
      const lenses = await client.sendRequest(CodeLensRequest.type, { textDocument: { uri } });
      return (lenses ?? []) as LensLike[];
    } catch (error) {
      this.output.warn(`Could not read code lenses: ${String(error)}`);
      return [];
    }
  }

  private async promptEntryArgs(entry: string, uri?: string): Promise<JsonObject | undefined> {
    const signature = uri !== undefined ? asSignature(await this.serverRequest('openprogram/entrySignature', { uri, entry })) : null;
    const key = uri !== undefined ? rememberKey(uri, entry) : undefined;
    const remembered = key !== undefined ? this.context.workspaceState.get<string>(key) : undefined;
    const text = await vscode.window.showInputBox({
      title: `Run ${entry}`,
      prompt: signatureHint(signature),
      value: initialArgsText(signature, remembered),
      validateInput: validateAgainst(signature),
    });
    if (text === undefined) {
      return undefined;
    }
    const parsed = checkEntryArgs(text, signature);
    if (!parsed.ok) {
      void vscode.window.showErrorMessage(parsed.error);
      return undefined;
    }
    if (key !== undefined) {
      await this.context.workspaceState.update(key, text);
    }
    return parsed.value;
  }

  private async runEntry(): Promise<void> {
    const client = this.runningClient();
    const document = client && this.activePythonDocument('run an entry');
    if (client === undefined || document === undefined) {
      return;
    }
    const uri = client.code2ProtocolConverter.asUri(document.uri);
    const entries = entriesFromLenses(await this.lensesFor(client, document));
    let entry: string | undefined;
    if (entries.length > 0) {
      const picked = await vscode.window.showQuickPick(
        entries.map((choice) => ({ label: choice.entry, description: choice.title })),
        { title: 'Run entry', placeHolder: 'Entry from PROGRAM_ENTRIES' },
      );
      entry = picked?.label;
    } else {
      entry = await vscode.window.showInputBox({
        title: 'Run entry',
        prompt: 'No PROGRAM_ENTRIES found in this file; type the entry name',
        validateInput: validateEntryName,
      });
    }
    if (entry === undefined) {
      return;
    }
    const args = await this.promptEntryArgs(entry, uri);
    if (args === undefined) {
      return;
    }
    await this.executeServerCommand(SERVER_COMMANDS.run, buildRunArguments(uri, entry, args));
  }

  private async resumeRun(): Promise<void> {
    const client = this.runningClient();
    if (client === undefined) {
      return;
    }
    const document = vscode.window.activeTextEditor?.document;
    const choices = document?.languageId === 'python' ? resumesFromLenses(await this.lensesFor(client, document)) : [];
    const other = '$(edit) Enter a run id…';
    let runId: string | undefined;
    if (choices.length > 0) {
      const picked = await vscode.window.showQuickPick(
        [...choices.map((choice) => ({ label: choice.runId, description: choice.title })), { label: other, description: '' }],
        { title: 'Resume run', placeHolder: 'Paused run to resume' },
      );
      runId = picked?.label === other ? undefined : picked?.label;
      if (picked === undefined) {
        return;
      }
    }
    if (runId === undefined) {
      runId = await vscode.window.showInputBox({ title: 'Resume run', prompt: 'Run id', validateInput: validateRunId });
    }
    if (runId === undefined) {
      return;
    }
    await this.resumeWithMode(runId);
  }

  /** Ask how to resume `runId`, then send `openprogram.resume(runId, {policy, rerunUncertain})`. */
  private async resumeWithMode(runId: string): Promise<void> {
    const modes: Array<{ label: string; options: ResumeOptions }> = [
      { label: 'Resume with the original code (keep_original)', options: { policy: 'keep_original' } },
      { label: 'Resume with the latest code (use_latest)', options: { policy: 'use_latest' } },
      { label: 'Resume and re-run the uncertain step', options: { rerunUncertain: true } },
    ];
    const mode = await vscode.window.showQuickPick(modes, { title: `Resume ${runId}` });
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
    const picked = await vscode.window.showQuickPick(items, {
      title: `Runs (${items.length})`,
      placeHolder: 'Select a paused run to resume it; all runs are listed in the output',
      matchOnDescription: true,
    });
    if (picked?.resumable === true) {
      await this.resumeWithMode(picked.runId);
    }
  }

  private async showRuns(): Promise<void> {
    const client = this.runningClient();
    if (client === undefined) {
      return;
    }
    const document = vscode.window.activeTextEditor?.document;
    const isFile = document?.languageId === 'python' && document.uri.scheme === 'file';
    const uri = isFile ? client.code2ProtocolConverter.asUri(document.uri) : undefined;
    const lenses = isFile ? await this.lensesFor(client, document) : [];
    const scopes = showRunsScopes(uri, isFile ? vscode.workspace.asRelativePath(document.uri) : undefined, lenses);
    let args = scopes[0]?.args ?? [];
    if (scopes.length > 1) {
      const picked = await vscode.window.showQuickPick(scopes, { title: 'Show runs', placeHolder: 'Which runs to list' });
      if (picked === undefined) {
        return;
      }
      args = picked.args;
    }
    const result = await this.executeServerCommand(SERVER_COMMANDS.showRuns, args);
    await this.pickRun(result);
  }

  private async executeServerCommand(command: string, args: unknown[]): Promise<unknown> {
    const client = this.runningClient();
    if (client === undefined) {
      return undefined;
    }
    try {
      const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
      this.reportResult(command, result);
      return result;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.output.error(`${command} failed: ${message}`);
      void vscode.window.showErrorMessage(`OpenProgram: ${message}`);
      return undefined;
    }
  }

  /** Log a command result; the server itself shows the user-facing message. */
  private reportResult(command: string, result: unknown): void {
    const summary = summarizeResult(result);
    if (summary !== undefined) {
      this.output.info(`${command}: ${summary}`);
    }
    this.output.info(formatCommandResult(command, result));
  }
}

/** Resolves when `child` has exited or after `ms`, whichever comes first. */
function exitedWithin(child: ChildProcess | undefined, ms: number): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    child.once('exit', () => {
      clearTimeout(timer);
      // Let the client's close handling run first.
      setTimeout(resolve, 50);
    });
  });
}

let controller: ServerController | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  controller = new ServerController(context);
  context.subscriptions.push({ dispose: () => void controller?.dispose() });
  await controller.activate();
}

export async function deactivate(): Promise<void> {
  const current = controller;
  controller = undefined;
  await current?.dispose();
}
