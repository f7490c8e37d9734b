/**
 * The `ServerClient` of clients.ts made of a real `vscode-languageclient` client: one server
 * process started with `spawnServer`, its options built from a `ClientSpec`.
 */
import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  Trace,
  type LanguageClientOptions,
} from 'vscode-languageclient/node';
import type { ChildProcess } from 'node:child_process';

import type { ClientFactory, ClientSpec, ClientState, ServerClient, UriLike } from './clients';
import { SECTION, type TraceLevel } from './settings';
import { spawnServer } from './serverLaunch';

/**
 * A language client that logs its own errors instead of popping one notification per
 * failure: crashes and failed starts are reported by the lifecycle, once, with actions.
 */
class QuietLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | 'force'): void {
    super.error(message, data, false);
  }
}

const STATES: Record<State, ClientState> = {
  [State.Starting]: 'starting',
  [State.Running]: 'running',
  [State.Stopped]: 'stopped',
  [State.StartFailed]: 'stopped',
};

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

class VsCodeServerClient implements ServerClient {
  private child: ChildProcess | undefined;
  private readonly client: LanguageClient;

  constructor(spec: ClientSpec, output: vscode.LogOutputChannel) {
    const options: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
      ],
      outputChannel: output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationFailedHandler: () => false,
      initializationOptions: spec.initializationOptions,
      synchronize: {
        fileEvents: vscode.workspace.createFileSystemWatcher('**/pyproject.toml'),
      },
      errorHandler: {
        error: (_error, _message, count) => ({
          action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        closed: () => ({ action: CloseAction.DoNotRestart, handled: true, message: spec.closed() }),
      },
      middleware: {
        workspace: {
          configuration: (params) => spec.configuration(params.items),
        },
        executeCommand: (command, args, next) => spec.executeCommand(command, args, async (name, finalArgs) => next(name, finalArgs)),
      },
    };
    this.client = new QuietLanguageClient(
      SECTION,
      'OpenProgram',
      async () => {
        this.child = spawnServer(spec.launch);
        return this.child;
      },
      options,
    );
  }

  get running(): boolean {
    return this.client.state === State.Running;
  }

  start(): Promise<void> {
    return this.client.start();
  }

  stop(timeoutMs: number): Promise<void> {
    return this.client.stop(timeoutMs);
  }

  sendRequest(method: string, params: unknown): Promise<unknown> {
    return this.client.sendRequest(method, params);
  }

  sendNotification(method: string, params: unknown): Promise<void> {
    return this.client.sendNotification(method, params);
  }

  setTrace(level: TraceLevel): Promise<void> {
    return this.client.setTrace(Trace.fromString(level));
  }

  onNotification(method: string, handler: (params: unknown) => void): vscode.Disposable {
    return this.client.onNotification(method, handler);
  }

  onDidChangeState(listener: (state: ClientState) => void): vscode.Disposable {
    return this.client.onDidChangeState((event) => listener(STATES[event.newState]));
  }

  asUri(uri: UriLike): string {
    return this.client.code2ProtocolConverter.asUri(uri as vscode.Uri);
  }

  declaredCommands(): readonly string[] {
    return this.client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
  }

  exited(ms: number): Promise<void> {
    return exitedWithin(this.child, ms);
  }

  kill(): void {
    const child = this.child;
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill();
    }
  }
}

/** Clients that log to `output`. */
export function languageClientFactory(output: vscode.LogOutputChannel): ClientFactory {
  return (spec) => new VsCodeServerClient(spec, output);
}
