/**
 * Integration test: the extension's own launch path (interpreter resolution, import probe,
 * `[interpreter, -m, openprogram_lsp]`, settings mapping) starts the real language server;
 * we speak LSP to it over stdio with vscode-jsonrpc and check the diagnostics it publishes.
 *
 * Interpreter: $OPENPROGRAM_TEST_PYTHON, else <repo>/.venv/bin/python, else python3.
 */
import { after, test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';

import { resolveInterpreter } from '../../src/interpreter';
import { buildServerLaunch, probeInterpreter, spawnServer } from '../../src/serverLaunch';
import { answerConfiguration, readSettings, toInitializationOptions, toServerConfiguration } from '../../src/settings';
import { SERVER_COMMANDS, buildResumeArguments, buildShowRunsArguments, entriesFromLenses, prepareServerCommand, type LensLike } from '../../src/commands';
import type { ServerClient } from '../../src/clients';
import { Palette } from '../../src/palette';
import { FakeOutput, FakeWindow } from '../unit/fakeVscode';

/** vscode-extension/ (this file runs from vscode-extension/out/test/integration/). */
const EXTENSION_ROOT = path.resolve(__dirname, '..', '..', '..');
const WAIT_MS = 60_000;

function testInterpreter(): string {
  const fromEnv = process.env.OPENPROGRAM_TEST_PYTHON;
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    return fromEnv;
  }
  const venv = path.resolve(EXTENSION_ROOT, '..', '.venv', 'bin', 'python');
  return fs.existsSync(venv) ? venv : 'python3';
}

const BAD_OPTIONS_PROGRAM = `from openprogram import Agent


class Writer(Agent):
    method_options = {"draft": {"exposee": "io"}}

    def draft(self, topic: str) -> str:
        return self(f"Write a note about {topic}")


def write_note(topic: str) -> str:
    return Writer().draft(topic)


PROGRAM_ENTRIES = ["write_note", "missing_entry"]
`;

const UNPARSABLE_PROGRAM = `from openprogram import Agent


def broken(topic: str) -> str
    return topic
`;

interface Diagnostic {
  code?: string | number;
  message: string;
  source?: string;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

interface PublishDiagnosticsParams {
  uri: string;
  diagnostics: Diagnostic[];
}

interface Session {
  connection: MessageConnection;
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  /** Resolves with the first publication for `uri` whose diagnostics satisfy `accept`. */
  diagnostics: (uri: string, accept: (diags: Diagnostic[]) => boolean) => Promise<Diagnostic[]>;
  configurationRequests: unknown[];
}

const sessions: Session[] = [];
const tempDirs: string[] = [];

after(() => {
  for (const session of sessions) {
    session.connection.dispose();
    if (session.child.exitCode === null && session.child.signalCode === null) {
      session.child.kill('SIGKILL');
    }
  }
  for (const dir of tempDirs) {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function makeWorkspace(files: Record<string, string>): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'openprogram-vscode-it-')));
  tempDirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    fs.writeFileSync(path.join(dir, name), text, 'utf8');
  }
  return dir;
}

function codes(diags: Diagnostic[]): string[] {
  return diags.map((d) => String(d.code ?? '')).sort();
}

/**
 * `runInterpreter`: the interpreter the server is told to run Programs with (default: the
 * one that runs the server), e.g. a fake that records its command line.
 */
async function startSession(workspace: string, rawSettings: Record<string, unknown>, runInterpreter?: string): Promise<Session> {
  const { settings, problems } = readSettings((key) => rawSettings[key]);
  assert.deepEqual(problems, []);
  const interpreter = resolveInterpreter({ setting: testInterpreter(), workspaceFolder: workspace });
  const serverConfiguration = () => ({
    ...toServerConfiguration(settings, interpreter.command, workspace),
    ...(runInterpreter !== undefined ? { interpreter: runInterpreter } : {}),
  });
  const launch = buildServerLaunch({
    interpreter: interpreter.command,
    baseEnv: process.env,
    cwd: workspace,
  });

  const probe = await probeInterpreter(launch.command, launch.env);
  assert.equal(probe.kind, 'ok', `interpreter probe failed: ${'message' in probe ? probe.message : ''}`);

  const child = spawnServer(launch);
  let stderrText = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderrText += chunk;
  });
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));

  const published: PublishDiagnosticsParams[] = [];
  const waiters: Array<{ uri: string; accept: (d: Diagnostic[]) => boolean; resolve: (d: Diagnostic[]) => void }> = [];
  const configurationRequests: unknown[] = [];
  connection.onNotification('textDocument/publishDiagnostics', (params: PublishDiagnosticsParams) => {
    published.push(params);
    for (const waiter of [...waiters]) {
      if (waiter.uri === params.uri && waiter.accept(params.diagnostics)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(params.diagnostics);
      }
    }
  });
  connection.onNotification('window/logMessage', () => undefined);
  connection.onNotification('window/showMessage', () => undefined);
  connection.onRequest('workspace/configuration', (params: { items: Array<{ section?: string }> }) => {
    configurationRequests.push(params);
    return answerConfiguration(params.items, () => serverConfiguration());
  });
  connection.onRequest('client/registerCapability', () => null);
  connection.onRequest('client/unregisterCapability', () => null);
  connection.onRequest('window/workDoneProgress/create', () => null);
  connection.onRequest('workspace/codeLens/refresh', () => null);
  connection.onRequest('workspace/diagnostic/refresh', () => null);
  connection.listen();

  const session: Session = {
    connection,
    child,
    stderr: () => stderrText,
    configurationRequests,
    diagnostics: (uri, accept) => {
      const seen = published.filter((p) => p.uri === uri).reverse().find((p) => accept(p.diagnostics));
      if (seen !== undefined) {
        return Promise.resolve(seen.diagnostics);
      }
      return new Promise<Diagnostic[]>((resolve, reject) => {
        const timer = setTimeout(() => {
          const last = published.filter((p) => p.uri === uri).pop();
          reject(
            new Error(
              `no matching publishDiagnostics for ${uri}; last: ${JSON.stringify(last?.diagnostics.map((d) => d.code) ?? null)}; ` +
                `server stderr:\n${stderrText}`,
            ),
          );
        }, WAIT_MS);
        waiters.push({
          uri,
          accept,
          resolve: (d) => {
            clearTimeout(timer);
            resolve(d);
          },
        });
      });
    },
  };
  sessions.push(session);

  const rootUri = pathToFileURL(workspace).href;
  const result = await connection.sendRequest<{ capabilities: Record<string, unknown> }>('initialize', {
    processId: process.pid,
    clientInfo: { name: 'openprogram-vscode-integration-test' },
    rootUri,
    workspaceFolders: [{ uri: rootUri, name: path.basename(workspace) }],
    initializationOptions: { ...toInitializationOptions(settings, interpreter.command, workspace), ...serverConfiguration() },
    capabilities: {
      workspace: { configuration: true, workspaceFolders: true },
      textDocument: {
        synchronization: { didSave: true, dynamicRegistration: false },
        publishDiagnostics: { relatedInformation: true, codeDescriptionSupport: true },
      },
      window: { workDoneProgress: true },
    },
  });
  assert.ok(result.capabilities.textDocumentSync !== undefined, 'server announces document sync');
  await connection.sendNotification('initialized', {});
  return session;
}

async function openDocument(session: Session, file: string): Promise<string> {
  const uri = pathToFileURL(file).href;
  await session.connection.sendNotification('textDocument/didOpen', {
    textDocument: { uri, languageId: 'python', version: 1, text: fs.readFileSync(file, 'utf8') },
  });
  return uri;
}

async function shutdown(session: Session): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => {
    if (session.child.exitCode !== null) {
      resolve(session.child.exitCode);
    } else {
      session.child.once('exit', (code) => resolve(code));
    }
  });
  await session.connection.sendRequest('shutdown');
  await session.connection.sendNotification('exit');
  return exited;
}

test('the launched server reports OP102 for a misspelt method_options key and OP001 for a file that does not parse', { timeout: 120_000 }, async () => {
  const workspace = makeWorkspace({ 'writer.py': BAD_OPTIONS_PROGRAM, 'broken.py': UNPARSABLE_PROGRAM });
  const session = await startSession(workspace, {});

  const writerUri = await openDocument(session, path.join(workspace, 'writer.py'));
  const writerDiags = await session.diagnostics(writerUri, (d) => d.some((x) => x.code === 'OP102'));
  const op102 = writerDiags.find((d) => d.code === 'OP102');
  assert.ok(op102 !== undefined);
  assert.match(op102.message, /exposee/);
  assert.equal(op102.range.start.line, 4, 'OP102 is on the method_options line (0-based line 4)');
  assert.ok(codes(writerDiags).includes('OP402'), `missing_entry is reported too: ${codes(writerDiags).join(',')}`);

  const brokenUri = await openDocument(session, path.join(workspace, 'broken.py'));
  const brokenDiags = await session.diagnostics(brokenUri, (d) => d.length > 0);
  assert.deepEqual(codes(brokenDiags), ['OP001']);

  assert.equal(await shutdown(session), 0, `server exit code; stderr:\n${session.stderr()}`);
});

test('lint settings from the extension reach the server (ignore OP102)', { timeout: 120_000 }, async () => {
  const workspace = makeWorkspace({ 'writer.py': BAD_OPTIONS_PROGRAM });
  const session = await startSession(workspace, { 'lint.ignore': ['op102'] });

  const uri = await openDocument(session, path.join(workspace, 'writer.py'));
  const diags = await session.diagnostics(uri, (d) => d.some((x) => x.code === 'OP402'));
  assert.equal(codes(diags).includes('OP102'), false, `OP102 is ignored: ${codes(diags).join(',')}`);

  assert.equal(await shutdown(session), 0, `server exit code; stderr:\n${session.stderr()}`);
});

const RUNNABLE_PROGRAM = `def summarize(text: str) -> str:
    return text.upper()


PROGRAM_ENTRIES = [summarize]
`;

/** An executable "interpreter" running tests/lsp/fake_cli.py, which records its argv. */
function fakeInterpreter(dir: string): string {
  const fakeCli = path.resolve(EXTENSION_ROOT, '..', 'tests', 'lsp', 'fake_cli.py');
  const python = testInterpreter();
  const resolved = path.isAbsolute(python) ? python : '/usr/bin/env python3';
  const exe = path.join(dir, 'fake-python');
  fs.writeFileSync(
    exe,
    `#!${resolved}\nimport runpy, sys\nsys.argv[0] = ${JSON.stringify(fakeCli)}\nrunpy.run_path(${JSON.stringify(fakeCli)}, run_name='__main__')\n`,
    { mode: 0o755 },
  );
  return exe;
}

function recordedCalls(store: string): string[][] {
  const file = path.join(store, 'calls.jsonl');
  if (!fs.existsSync(file)) {
    return [];
  }
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as string[]);
}

test('lens and palette command arguments built by the extension are what the server runs', { timeout: 120_000 }, async () => {
  const workspace = makeWorkspace({ 'prog.py': RUNNABLE_PROGRAM });
  const store = path.join(workspace, '.op-store');
  const session = await startSession(workspace, { store }, fakeInterpreter(workspace));
  const uri = await openDocument(session, path.join(workspace, 'prog.py'));

  // ▶ Run lens: [uri, entry] from the server; the extension asks for the keyword arguments
  const lenses = await session.connection.sendRequest<LensLike[] | null>('textDocument/codeLens', { textDocument: { uri } });
  const run = (lenses ?? []).find((lens) => lens.command?.command === SERVER_COMMANDS.run)?.command;
  assert.ok(run !== undefined && run !== null, `a ▶ Run lens: ${JSON.stringify(lenses)}`);
  assert.deepEqual(run.arguments, [uri, 'summarize']);
  assert.deepEqual(entriesFromLenses(lenses).map((e) => e.entry), ['summarize']);
  const args = await prepareServerCommand(run.command, run.arguments ?? [], async () => ({ text: 'hi' }));
  assert.deepEqual(args, [uri, 'summarize', { text: 'hi' }]);
  const ran = await session.connection.sendRequest<Record<string, unknown>>('workspace/executeCommand', { command: run.command, arguments: args });
  assert.equal(ran.status, 'completed', JSON.stringify(ran));
  assert.equal(ran.result, 'HI');
  const runArgv = recordedCalls(store).at(-1) ?? [];
  assert.deepEqual(runArgv.slice(0, 3), ['-m', 'openprogram.cli', 'run']);
  assert.deepEqual(runArgv.slice(-2), ['--', `${path.join(workspace, 'prog.py')}:summarize`]);
  assert.equal(runArgv[runArgv.indexOf('--args') + 1], '{"text": "hi"}');
  assert.equal(runArgv.includes('--store'), false, `no --store on the command line: ${runArgv.join(' ')}`);

  // Resume…: the options object reaches the CLI as --policy / --rerun-uncertain
  const resumed = await session.connection.sendRequest<Record<string, unknown>>('workspace/executeCommand', {
    command: SERVER_COMMANDS.resume,
    arguments: buildResumeArguments('0707070707070707', { policy: 'use_latest', rerunUncertain: true }),
  });
  assert.equal(resumed.status, 'completed', JSON.stringify(resumed));
  // the store reaches the CLI as $OPENPROGRAM_STORE (the fake CLI records its calls in that
  // store), never as --store on a command line other users can read
  assert.deepEqual(recordedCalls(store).at(-1), [
    '-m', 'openprogram.cli', 'resume', '--json', '--policy', 'use_latest', '--rerun-uncertain', '--', '0707070707070707',
  ]);

  // Show Runs from the palette, no document: a list (empty here), not a usage error
  const rows = await session.connection.sendRequest<unknown>('workspace/executeCommand', {
    command: SERVER_COMMANDS.showRuns,
    arguments: buildShowRunsArguments(),
  });
  assert.deepEqual(rows, []);
  const fileRows = await session.connection.sendRequest<unknown>('workspace/executeCommand', {
    command: SERVER_COMMANDS.showRuns,
    arguments: buildShowRunsArguments(uri, 'summarize'),
  });
  assert.deepEqual(fileRows, []);

  assert.equal(await shutdown(session), 0, `server exit code; stderr:\n${session.stderr()}`);
});

const TYPED_PROGRAM = `def main(n: int, names: list[str] | None = None) -> int:
    return n


PROGRAM_ENTRIES = ["main"]
`;

test('the arguments prompt shows the server\'s check of what is typed, in the words of openprogram run', { timeout: 120_000 }, async () => {
  const workspace = makeWorkspace({ 'typed.py': TYPED_PROGRAM });
  const session = await startSession(workspace, {});
  const uri = await openDocument(session, path.join(workspace, 'typed.py'));
  const window = new FakeWindow();
  const memory = new Map<string, unknown>();
  // the palette over this real connection (only requests are sent on the prompt's path)
  const client = { sendRequest: (method: string, params: unknown) => session.connection.sendRequest(method, params) } as unknown as ServerClient;
  const palette = new Palette({
    window,
    activeDocument: () => undefined,
    relativePath: (u) => u.fsPath,
    clipboard: { writeText: async () => undefined },
    memory: { get: <T>(key: string) => memory.get(key) as T | undefined, update: async (key, value) => void memory.set(key, value) },
    output: new FakeOutput(),
    client: () => client,
    refreshRuns: () => undefined,
    showGraph: async () => undefined,
    checkArgsMs: WAIT_MS,
  });
  window.inputs.push(['{"n": 1, "names": ["a", 2]}', '{"nmes": [], "if": 1}', '{"n": 1, "names": ["a"]}']);

  assert.deepEqual(await palette.promptEntryArgs('main', uri), { n: 1, names: ['a'] });
  assert.equal(window.inputsShown[0]?.prompt, 'main(n: int, names: list[str] | None = null)');
  assert.deepEqual(window.inputsShown[0]?.rejected, [
    "argument 'names' expects list[str] | None, got integer 2 at names[1]",
    "unknown argument 'nmes' (did you mean 'names'?); unknown argument 'if' (it takes n, names); missing required argument 'n' (int)",
  ]);
  assert.equal(await shutdown(session), 0, `server exit code; stderr:\n${session.stderr()}`);
});
