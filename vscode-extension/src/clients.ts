/**
 * The language server's lifecycle (no `vscode` import): one server for the window, started
 * with the first folder's interpreter; every workspace folder is served by it with its own
 * resource-scoped settings (answered per `scopeUri`); folders come and go without a restart.
 * Crashes restart it with backoff (`RestartPolicy`); settings changes are pushed with
 * `didChangeConfiguration`, or restart it when the interpreter changed.
 *
 * Everything VS Code-specific comes in through `LifecycleHost` (structurally `vscode.window`,
 * `vscode.workspace`, ...) and the `ClientFactory` (a `vscode-languageclient` client), so
 * unit tests drive this module with fakes of those APIs.
 */
import { chosenInterpreter, describeInterpreter, discoverInterpreter, type PythonEnvironments, type ResolvedInterpreter } from './interpreter';
import { shouldNotify, type MessageType } from './notifications';
import { RestartPolicy } from './restartPolicy';
import { buildServerLaunch, type ProbeResult, type ServerLaunch } from './serverLaunch';
import {
  SECTION,
  answerConfiguration,
  classifyChange,
  readSettings,
  toInitializationOptions,
  toServerConfiguration,
  type ServerConfiguration,
  type Settings,
  type TraceLevel,
} from './settings';
import type { ServerState } from './status';

export interface Disposable {
  dispose(): unknown;
}

/** A `vscode.Uri` as far as this extension looks at it. */
export interface UriLike {
  readonly scheme: string;
  readonly fsPath: string;
  toString(): string;
}

/** A `vscode.WorkspaceFolder`. */
export interface FolderLike {
  readonly uri: UriLike;
}

/** The output channel (`vscode.LogOutputChannel`). */
export interface Log {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  show(preserveFocus?: boolean): void;
}

/** The message functions of `vscode.window`. */
export interface Messages {
  showErrorMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
  showWarningMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
  showInformationMessage(message: string, ...items: string[]): PromiseLike<string | undefined>;
}

export type ClientState = 'starting' | 'running' | 'stopped';

/** A language client connected to one server process (`vscode-languageclient`'s `LanguageClient`). */
export interface ServerClient {
  readonly running: boolean;
  start(): Promise<void>;
  stop(timeoutMs: number): Promise<void>;
  sendRequest(method: string, params: unknown): Promise<unknown>;
  sendNotification(method: string, params: unknown): Promise<void>;
  setTrace(level: TraceLevel): Promise<void>;
  onNotification(method: string, handler: (params: unknown) => void): Disposable;
  onDidChangeState(listener: (state: ClientState) => void): Disposable;
  /** The protocol URI of a document. */
  asUri(uri: UriLike): string;
  /** The commands the server declared in `initialize` (`executeCommandProvider`). */
  declaredCommands(): readonly string[];
  /** Resolves when the server process has exited (after the client saw it), or after `ms`. */
  exited(ms: number): Promise<void>;
  /** Kill the server process if it is still alive. */
  kill(): void;
}

/** What a new client is made of; the factory turns it into `LanguageClientOptions`. */
export interface ClientSpec {
  launch: ServerLaunch;
  initializationOptions: object;
  /** The connection closed: decide about a restart and return the line for the log. */
  closed(): string;
  /** Answer a `workspace/configuration` request. */
  configuration(items: ReadonlyArray<{ section?: string | undefined; scopeUri?: string | undefined }>): Promise<unknown[]>;
  /** Middleware of `workspace/executeCommand` invoked by lenses; `next` sends it to the server. */
  executeCommand(command: string, args: unknown[], next: (command: string, args: unknown[]) => PromiseLike<unknown>): Promise<unknown>;
}

export type ClientFactory = (spec: ClientSpec) => ServerClient;

/** Where server commands invoked by lenses go before and after the server (the palette). */
export interface ServerCommandRouter {
  /** Through the client's `executeCommand` middleware. */
  viaMiddleware(command: string, args: unknown[], next: (command: string, args: unknown[]) => PromiseLike<unknown>): Promise<unknown>;
  /** Through a command registered here because the server did not declare it. */
  viaCommand(command: string, args: unknown[]): Promise<unknown>;
}

/** The part of the Python extension's API this extension uses. */
export interface PythonExtensionApi {
  environments?: PythonEnvironments<UriLike> & {
    onDidChangeActiveEnvironmentPath?: (listener: (event: unknown) => unknown) => Disposable;
  };
}

/** `vscode.Extension<PythonExtensionApi>`. */
export interface PythonExtension {
  readonly isActive: boolean;
  readonly exports: PythonExtensionApi;
  activate(): PromiseLike<PythonExtensionApi>;
}

/** `vscode.ConfigurationChangeEvent`. */
export interface ConfigurationChange {
  affectsConfiguration(section: string, scope?: UriLike): boolean;
}

export interface LifecycleHost {
  window: Messages & { createTerminal(name: string): { show(): void; sendText(text: string): void } };
  workspace: {
    /** The workspace folders, first one first. */
    folders(): readonly FolderLike[];
    /** The folder a `scopeUri` of `workspace/configuration` belongs to. */
    folderOf(scopeUri: string): FolderLike | undefined;
    /** `vscode.workspace.getConfiguration(SECTION, folder)`. */
    configuration(folder?: UriLike): { get(key: string): unknown };
  };
  executeCommand(id: string, ...args: unknown[]): PromiseLike<unknown>;
  registerCommand(id: string, callback: (...args: unknown[]) => unknown): Disposable;
  /** `vscode.extensions.getExtension('ms-python.python')`. */
  pythonExtension(): PythonExtension | undefined;
  output: Log;
  /** Show the server state (the language status item). */
  showState(state: ServerState, detail: string): void;
  createClient: ClientFactory;
  /** Checks that the interpreter can import the server (`probeInterpreter`). */
  probe(command: string, env: NodeJS.ProcessEnv): Promise<ProbeResult>;
  router: ServerCommandRouter;
  /** The server commands lenses reference (registered here when the server does not declare them). */
  serverCommands: readonly string[];
  /** Runs may look different (settings, folders, a new server): reload the Runs view. */
  refreshRuns(): void;
  /** The server said runs changed (`openprogram/runsChanged`). */
  runsChanged(): void;
  baseEnv?: NodeJS.ProcessEnv;
  policy?: RestartPolicy;
}

/** Send a custom request; undefined (logged) when the client is missing or the request fails. */
export async function requestQuietly(client: ServerClient | undefined, method: string, params: object, output: Log): Promise<unknown> {
  if (client === undefined) {
    return undefined;
  }
  try {
    return await client.sendRequest(method, params);
  } catch (error) {
    output.warn(`${method} failed: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

export class ServerLifecycle {
  private readonly policy: RestartPolicy;
  private readonly disposables: Disposable[] = [];
  private client: ServerClient | undefined;
  private clientDisposables: Disposable[] = [];
  private generation = 0;
  private queue: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | undefined;
  private settings: Settings;
  private interpreter: ResolvedInterpreter | undefined;
  private lastNotice = '';
  private pythonApi: PythonExtensionApi | undefined;
  private disposed = false;

  constructor(private readonly host: LifecycleHost) {
    this.policy = host.policy ?? new RestartPolicy();
    this.settings = this.loadSettings();
  }

  /** The client when its server is running. */
  runningClient(): ServerClient | undefined {
    return this.client !== undefined && this.client.running ? this.client : undefined;
  }

  /** A custom request to the running server; undefined (logged) when it is not running or fails. */
  request(method: string, params: object): Promise<unknown> {
    return requestQuietly(this.runningClient(), method, params, this.host.output);
  }

  /** Hook the Python extension (its environment changes) and start the server. */
  async start(): Promise<void> {
    await this.hookPythonExtension();
    void this.enqueue(() => this.startServer());
  }

  /** Stop the server for good. */
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

  /** `vscode.workspace.onDidChangeConfiguration`. */
  onConfigurationChanged(event: ConfigurationChange): void {
    if (event.affectsConfiguration(SECTION)) {
      const folders = this.host.workspace.folders();
      this.onSettingsChanged(folders.some((folder) => event.affectsConfiguration(SECTION, folder.uri)));
    }
  }

  /**
   * `vscode.workspace.onDidChangeWorkspaceFolders`: the client sends
   * `workspace/didChangeWorkspaceFolders`; the server serves the new folders (settings, store)
   * without a restart and says when the runs changed.
   */
  onFoldersChanged(): void {
    this.host.refreshRuns();
  }

  /** Restart the server; `manual` (user asked, settings changed) forgets past crashes and notices. */
  restart(reason: string, manual: boolean): void {
    if (this.disposed) {
      return;
    }
    this.cancelPendingRestart();
    if (manual) {
      this.policy.reset();
      this.lastNotice = '';
    }
    this.host.output.info(`Restarting the language server: ${reason}`);
    this.host.showState('restarting', reason);
    void this.enqueue(async () => {
      await this.stopServer();
      await this.startServer();
    });
  }

  /** Queued lifecycle work: one start/stop at a time, failures logged. */
  private enqueue(task: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(task).catch((error: unknown) => {
      this.host.output.error(`OpenProgram: ${error instanceof Error ? error.message : String(error)}`);
    });
    return this.queue;
  }

  /** A server `window/showMessage`: always logged, shown as configured by showNotifications. */
  private onServerMessage(type: MessageType, message: string): void {
    this.host.output.info(message);
    if (!shouldNotify(this.settings.showNotifications, type, message)) {
      return;
    }
    const window = this.host.window;
    if (type === 1) {
      void window.showErrorMessage(message);
    } else if (type === 2) {
      void window.showWarningMessage(message);
    } else {
      void window.showInformationMessage(message);
    }
  }

  /** The folder the server process starts in (the first one); each folder is served. */
  private workspaceFolder(): FolderLike | undefined {
    return this.host.workspace.folders()[0];
  }

  /** The window's settings, or a workspace folder's own (resource-scoped) settings. */
  private loadSettings(folder?: UriLike): Settings {
    const config = this.host.workspace.configuration(folder);
    const { settings, problems } = readSettings((key) => config.get(key));
    for (const problem of problems) {
      this.host.output.warn(folder !== undefined ? `${folder.fsPath}: ${problem}` : problem);
    }
    return settings;
  }

  /** The interpreter of `folder` (the window's setting when none): setting, Python extension, default. */
  private discover(setting: string, folder: FolderLike | undefined): Promise<ResolvedInterpreter> {
    return discoverInterpreter({
      setting,
      folder: folder !== undefined ? { path: folder.uri.fsPath, resource: folder.uri } : undefined,
      environments: this.pythonApi?.environments,
      warn: (message) => this.host.output.warn(message),
    });
  }

  /** What the server gets for one `workspace/configuration` scope (a folder, or the window). */
  private async configurationFor(scopeUri: string | undefined): Promise<ServerConfiguration> {
    const folder = scopeUri !== undefined ? this.host.workspace.folderOf(scopeUri) : undefined;
    if (folder === undefined) {
      return this.serverConfiguration();
    }
    const settings = this.loadSettings(folder.uri);
    const interpreter = await this.discover(settings.interpreter, folder);
    return toServerConfiguration(settings, chosenInterpreter(interpreter), folder.uri.fsPath);
  }

  private async hookPythonExtension(): Promise<void> {
    const extension = this.host.pythonExtension();
    if (extension === undefined) {
      return;
    }
    try {
      this.pythonApi = extension.isActive ? extension.exports : await extension.activate();
    } catch (error) {
      this.host.output.warn(`Python extension could not be activated: ${String(error)}`);
      return;
    }
    const onChange = this.pythonApi?.environments?.onDidChangeActiveEnvironmentPath;
    if (onChange !== undefined) {
      this.disposables.push(
        onChange(() => {
          if (this.settings.interpreter === '') {
            void this.discover(this.settings.interpreter, this.workspaceFolder()).then((next) => {
              if (next.command !== this.interpreter?.command) {
                this.restart(`Python environment changed to ${next.command}`, true);
              }
            });
          }
        }),
      );
    }
  }

  private serverConfiguration(): ServerConfiguration {
    return toServerConfiguration(this.settings, chosenInterpreter(this.interpreter), this.workspaceFolder()?.uri.fsPath);
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
    const client = this.runningClient();
    if (client === undefined) {
      return;
    }
    if (change.configuration || inFolder) {
      // The running server takes new lint/store settings without a restart (like ruff-vscode)
      // and pulls each folder's own values (workspace/configuration with a scopeUri).
      void client.sendNotification('workspace/didChangeConfiguration', {
        settings: { [SECTION]: this.serverConfiguration() },
      });
      this.host.refreshRuns();
    }
    if (change.trace) {
      void client.setTrace(this.settings.trace);
    }
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
    const host = this.host;
    host.showState('starting', '');
    const folder = this.workspaceFolder();
    this.interpreter = await this.discover(this.settings.interpreter, folder);
    const interpreterText = describeInterpreter(this.interpreter);
    host.output.info(`Interpreter: ${interpreterText}`);
    const launch = buildServerLaunch({
      interpreter: this.interpreter.command,
      baseEnv: host.baseEnv ?? process.env,
      cwd: folder?.uri.fsPath,
    });

    const probe = await host.probe(launch.command, launch.env);
    if (probe.kind !== 'ok') {
      host.showState(probe.kind === 'failed' ? 'failed' : 'not-installed', probe.message);
      host.output.error(probe.message);
      await this.notifyProbeFailure(probe.message, probe.kind === 'missing-package' ? probe.installCommand : undefined);
      return;
    }

    const generation = ++this.generation;
    const client = host.createClient({
      launch,
      initializationOptions: toInitializationOptions(this.settings, chosenInterpreter(this.interpreter), folder?.uri.fsPath),
      closed: () => this.onServerClosed(generation),
      configuration: (items) => answerConfiguration(items, (scopeUri) => this.configurationFor(scopeUri)),
      // Lenses carry the server's command ids; the client registers them and routes every
      // invocation through here: a `▶ Run` lens gets its keyword arguments typed first.
      executeCommand: (command, args, next) => host.router.viaMiddleware(command, args, next),
    });
    this.client = client;
    this.clientDisposables.push(
      client.onDidChangeState((state) => {
        if (generation !== this.generation) {
          return;
        }
        if (state === 'running') {
          host.showState('running', interpreterText);
        } else if (state === 'starting') {
          host.showState('starting', interpreterText);
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
        await client.setTrace(this.settings.trace);
        this.registerMissingServerCommands(client);
        this.clientDisposables.push(
          client.onNotification('openprogram/runsChanged', () => host.runsChanged()),
          client.onNotification('window/showMessage', (params) => {
            const message = params as { type: MessageType; message: string };
            this.onServerMessage(message.type, message.message);
          }),
        );
        host.refreshRuns();
        host.output.info(`Language server started (${interpreterText})`);
      },
      async (error: unknown) => {
        // If the process died, the close handler and the restart policy take over.
        await client.exited(2_000);
        if (generation !== this.generation) {
          return;
        }
        const message = `The OpenProgram language server failed to start: ${error instanceof Error ? error.message : String(error)}`;
        host.output.error(message);
        // A crash during start is handled by the restart policy; anything else is reported once.
        if (!client.running && this.restartTimer === undefined && this.policy.recentCrashes === 0) {
          host.showState('failed', message);
          void this.notifyOnce(message);
        }
      },
    );
  }

  /** Lenses reference the server's command ids; make them callable even if the server does not list them. */
  private registerMissingServerCommands(client: ServerClient): void {
    const declared = client.declaredCommands();
    for (const id of this.host.serverCommands) {
      if (!declared.includes(id)) {
        this.clientDisposables.push(this.host.registerCommand(id, (...args: unknown[]) => this.host.router.viaCommand(id, args)));
      }
    }
  }

  /** Decide on restart after the connection closed; returns the line for the log. */
  private onServerClosed(generation: number): string {
    if (generation !== this.generation || this.disposed) {
      return 'Connection to the language server closed.';
    }
    const decision = this.policy.onCrash(Date.now());
    if (decision.action === 'give-up') {
      this.host.showState('failed', decision.message);
      this.host.output.error(decision.message);
      void this.host.window.showErrorMessage(decision.message, 'Show Output', 'Restart Server').then((choice) => this.onNoticeChoice(choice));
      return 'Connection to the language server closed; not restarting.';
    }
    this.host.showState('restarting', decision.message);
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
    this.client = undefined;
    for (const disposable of this.clientDisposables.splice(0)) {
      disposable.dispose();
    }
    if (client !== undefined) {
      try {
        if (client.running) {
          await client.stop(2000);
        }
      } catch (error) {
        this.host.output.warn(`Stopping the language server: ${String(error)}`);
      }
      client.kill();
    }
    this.host.showState('stopped', '');
  }

  private onNoticeChoice(choice: string | undefined): void {
    if (choice === 'Show Output') {
      this.host.output.show(true);
    } else if (choice === 'Restart Server') {
      this.restart('restart requested', true);
    }
  }

  private async notifyOnce(message: string): Promise<void> {
    if (message === this.lastNotice) {
      return;
    }
    this.lastNotice = message;
    this.onNoticeChoice(await this.host.window.showErrorMessage(message, 'Show Output', 'Restart Server'));
  }

  private async notifyProbeFailure(message: string, install: string | undefined): Promise<void> {
    if (message === this.lastNotice) {
      return; // no notification loops: the same problem is reported once until it changes
    }
    this.lastNotice = message;
    const window = this.host.window;
    const actions = install !== undefined ? ['Install', 'Select Interpreter', 'Open Settings'] : ['Select Interpreter', 'Open Settings'];
    const choice = await window.showErrorMessage(message, ...actions);
    if (choice === 'Install' && install !== undefined) {
      const terminal = window.createTerminal('OpenProgram install');
      terminal.show();
      terminal.sendText(install);
      void window.showInformationMessage('When the install has finished, run "OpenProgram: Restart Server".', 'Restart Server').then((next) => {
        if (next === 'Restart Server') {
          this.restart('restart requested', true);
        }
      });
    } else if (choice === 'Select Interpreter') {
      if (this.pythonApi !== undefined) {
        await this.host.executeCommand('python.setInterpreter');
      } else {
        await this.host.executeCommand('workbench.action.openSettings', `${SECTION}.interpreter`);
      }
    } else if (choice === 'Open Settings') {
      await this.host.executeCommand('workbench.action.openSettings', SECTION);
    }
  }
}
