/**
 * VS Code wiring only: creates the server lifecycle (clients.ts), the palette (palette.ts),
 * the Runs view and the run graph, registers the commands and views, and disposes them.
 */
import * as vscode from 'vscode';

import { ServerLifecycle, type PythonExtension } from './clients';
import { CLIENT_COMMANDS, SERVER_COMMANDS } from './commands';
import { GraphPanels } from './graphPanel';
import { languageClientFactory } from './languageClient';
import { Palette } from './palette';
import { RUNS_VIEW_ID, RunsProvider } from './runsView';
import { probeInterpreter } from './serverLaunch';
import { SECTION } from './settings';
import { statusView, type ServerState } from './status';

const PYTHON_EXTENSION_ID = 'ms-python.python';

/** Stops the server, then disposes what the extension created; the same promise on every call. */
let shutdown: (() => Promise<void>) | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('OpenProgram', { log: true });
  // Scoped to Python documents, like ruff-vscode: no global status-bar item.
  const status = vscode.languages.createLanguageStatusItem(SECTION, { language: 'python' });
  status.name = 'OpenProgram';
  status.command = { title: 'Show Output', command: CLIENT_COMMANDS.showOutput };
  const showState = (state: ServerState, detail: string): void => {
    const view = statusView(state, detail);
    status.text = view.text;
    status.detail = view.tooltip;
    status.busy = state === 'starting' || state === 'restarting';
    status.severity = view.error ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
  };

  const request = (method: string, params: object): Promise<unknown> => server.request(method, params);
  const runs = new RunsProvider(request);
  const graphs = new GraphPanels(context.extensionUri, request);
  const palette: Palette = new Palette({
    window: vscode.window,
    activeDocument: () => vscode.window.activeTextEditor?.document,
    relativePath: (uri) => vscode.workspace.asRelativePath(uri as vscode.Uri),
    clipboard: vscode.env.clipboard,
    memory: context.workspaceState,
    output,
    client: () => server.runningClient(),
    refreshRuns: () => runs.refresh(),
    showGraph: (runId) => graphs.show(runId),
    saveDocument: async (uri) => {
      const target = vscode.Uri.parse(uri).toString();
      const document = vscode.workspace.textDocuments.find((open) => open.uri.toString() === target);
      return document === undefined || !document.isDirty || document.save();
    },
  });
  const server: ServerLifecycle = new ServerLifecycle({
    window: vscode.window,
    workspace: {
      folders: () => vscode.workspace.workspaceFolders ?? [],
      folderOf: (scopeUri) => vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(scopeUri)),
      configuration: (folder) => vscode.workspace.getConfiguration(SECTION, folder as vscode.Uri | undefined),
    },
    executeCommand: (id, ...args) => vscode.commands.executeCommand(id, ...args),
    registerCommand: (id, callback) => vscode.commands.registerCommand(id, callback),
    pythonExtension: () => vscode.extensions.getExtension(PYTHON_EXTENSION_ID) as PythonExtension | undefined,
    output,
    showState,
    createClient: languageClientFactory(output),
    probe: (command, env) => probeInterpreter(command, env),
    router: palette,
    serverCommands: Object.values(SERVER_COMMANDS),
    refreshRuns: () => runs.refresh(),
    runsChanged: () => {
      runs.refresh();
      void graphs.refresh();
    },
  });

  const disposables: vscode.Disposable[] = [output, status, runs, graphs];
  const register = (id: string, fn: (...args: unknown[]) => unknown): void => {
    disposables.push(vscode.commands.registerCommand(id, fn));
  };
  register(CLIENT_COMMANDS.runEntry, () => palette.runEntry());
  register(CLIENT_COMMANDS.resumeRun, () => palette.resumeRun());
  register(CLIENT_COMMANDS.listRuns, () => palette.showRuns());
  register(CLIENT_COMMANDS.restartServer, () => server.restart('restart requested', true));
  register(CLIENT_COMMANDS.showOutput, () => output.show(true));
  register(CLIENT_COMMANDS.refreshRuns, () => runs.refresh());
  register(CLIENT_COMMANDS.resumeFromView, (node) => palette.resumeFromView(node));
  register(CLIENT_COMMANDS.approveFromView, (node) => palette.approveFromView(node));
  register(CLIENT_COMMANDS.denyFromView, (node) => palette.denyFromView(node));
  register(CLIENT_COMMANDS.cancelRun, (node) => palette.cancelRun(node));
  register(CLIENT_COMMANDS.pauseRun, (node) => palette.pauseRun(node));
  register(CLIENT_COMMANDS.showRunGraph, (node) => palette.showRunGraph(node));
  register(CLIENT_COMMANDS.copyRunId, (node) => palette.copyRunId(node));
  disposables.push(
    vscode.window.registerTreeDataProvider(RUNS_VIEW_ID, runs),
    vscode.workspace.onDidChangeConfiguration((event) =>
      server.onConfigurationChanged({ affectsConfiguration: (section, scope) => event.affectsConfiguration(section, scope as vscode.Uri | undefined) }),
    ),
    vscode.workspace.onDidChangeWorkspaceFolders(() => server.onFoldersChanged()),
  );
  // The server stops first, then the views and channels it used go.
  let stopped: Promise<void> | undefined;
  shutdown = (): Promise<void> => {
    stopped ??= server.dispose().finally(() => {
      for (const disposable of disposables.splice(0)) {
        disposable.dispose();
      }
    });
    return stopped;
  };
  context.subscriptions.push({ dispose: () => void shutdown?.() });
  await server.start();
}

export async function deactivate(): Promise<void> {
  await shutdown?.();
}
