import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';

import { ServerLifecycle, type ClientSpec, type FolderLike, type ServerCommandRouter } from '../../src/clients';
import { RestartPolicy } from '../../src/restartPolicy';
import type { ProbeResult } from '../../src/serverLaunch';
import type { ServerState } from '../../src/status';
import { FakeLanguageClient, FakeOutput, FakeUri, FakeWindow, until } from './fakeVscode';

const A = path.resolve('/ws/a');
const B = path.resolve('/ws/b');

type Values = Record<string, unknown>;

/**
 * A lifecycle over fake VS Code APIs: `settings` holds the window's values ('' key) and each
 * folder's own ones (by path), like resource-scoped settings; every client it creates is kept.
 */
function setup(
  options: {
    folders?: string[];
    settings?: Record<string, Values>;
    probe?: ProbeResult;
    policy?: RestartPolicy;
    /** What the server declares in `executeCommandProvider`. */
    declared?: string[];
    /** Clients whose start waits for `failStart`. */
    manualStart?: boolean;
  } = {},
) {
  const window = new FakeWindow();
  const output = new FakeOutput();
  const folders: FolderLike[] = (options.folders ?? [A]).map((folder) => ({ uri: new FakeUri(folder) }));
  const settings: Record<string, Values> = options.settings ?? {};
  const clients: FakeLanguageClient[] = [];
  const states: Array<[ServerState, string]> = [];
  const commands = new Map<string, (...args: unknown[]) => unknown>();
  const executed: unknown[][] = [];
  const calls = { refreshRuns: 0, runsChanged: 0, routed: [] as unknown[][] };
  const router: ServerCommandRouter = {
    viaMiddleware: async (command, args, next) => next(command, args),
    viaCommand: async (command, args) => {
      calls.routed.push([command, ...args]);
      return undefined;
    },
  };
  const lifecycle = new ServerLifecycle({
    window,
    workspace: {
      folders: () => folders,
      folderOf: (scopeUri) => folders.find((folder) => scopeUri.startsWith(folder.uri.toString())),
      configuration: (folder) => {
        // a folder's own value wins over the window's (VS Code's resource scope)
        const own = folder !== undefined ? settings[folder.fsPath] ?? {} : {};
        return { get: (key: string) => (key in own ? own[key] : settings['']?.[key]) };
      },
    },
    executeCommand: async (id, ...args) => {
      executed.push([id, ...args]);
    },
    registerCommand: (id, callback) => {
      commands.set(id, callback);
      return { dispose: () => commands.delete(id) };
    },
    pythonExtension: () => undefined,
    output,
    showState: (state, detail) => {
      states.push([state, detail]);
    },
    createClient: (spec: ClientSpec) => {
      const client = new FakeLanguageClient(spec);
      client.manualStart = options.manualStart ?? false;
      if (options.declared !== undefined) {
        client.declared = options.declared;
      }
      clients.push(client);
      return client;
    },
    probe: async () => options.probe ?? { kind: 'ok' },
    router,
    serverCommands: ['openprogram.run', 'openprogram.resume', 'openprogram.showRuns'],
    refreshRuns: () => {
      calls.refreshRuns++;
    },
    runsChanged: () => {
      calls.runsChanged++;
    },
    baseEnv: { PATH: '/usr/bin' },
    ...(options.policy !== undefined ? { policy: options.policy } : {}),
  });
  /** Change settings and tell the lifecycle, as VS Code does (`scope`: a folder's own value). */
  const change = (scope: string, values: Values): void => {
    settings[scope] = { ...settings[scope], ...values };
    lifecycle.onConfigurationChanged({
      affectsConfiguration: (section, folder) => section === 'openprogram' && (folder === undefined || scope === '' || folder.fsPath === scope),
    });
  };
  return { lifecycle, window, output, folders, settings, clients, states, commands, executed, calls, change };
}

function spec(client: FakeLanguageClient | undefined): ClientSpec {
  assert.ok(client?.spec !== undefined, 'a client was created');
  return client.spec;
}

test('one server starts in the first folder; each folder gets its own settings from it', async () => {
  const t = setup({
    folders: [A, B],
    settings: {
      '': { interpreter: '/usr/bin/python3.12', 'lint.ignore': ['OP108'], 'trace.server': 'messages' },
      [B]: { store: 'runs/b', interpreter: '/opt/b/bin/python' },
    },
  });
  await t.lifecycle.start();
  await until(() => t.clients[0]?.running === true && t.calls.refreshRuns === 1, 'the server is running');

  assert.equal(t.clients.length, 1);
  const first = spec(t.clients[0]);
  assert.deepEqual(first.launch.command, '/usr/bin/python3.12');
  assert.deepEqual(first.launch.args, ['-m', 'openprogram_lsp']);
  assert.equal(first.launch.cwd, A);
  assert.equal(first.launch.env.PATH, '/usr/bin');
  assert.deepEqual(first.initializationOptions, { lint: { ignore: ['OP108'] }, interpreter: '/usr/bin/python3.12', store: '' });
  assert.deepEqual(t.clients[0]?.traces, ['messages']);
  assert.deepEqual(t.states.at(-1), ['running', '/usr/bin/python3.12 (from the openprogram.interpreter setting)']);

  const answers = await first.configuration([
    { section: 'openprogram', scopeUri: new FakeUri(B).toString() + '/app.py' },
    { section: 'openprogram', scopeUri: new FakeUri(A).toString() },
    { section: 'openprogram.lint' },
  ]);
  assert.deepEqual(answers, [
    { lint: { ignore: ['OP108'] }, interpreter: '/opt/b/bin/python', store: path.join(B, 'runs', 'b') },
    { lint: { ignore: ['OP108'] }, interpreter: '/usr/bin/python3.12', store: '' },
    { ignore: ['OP108'] },
  ]);
});

test('folders added or removed keep the same server; the Runs view reloads', async () => {
  const t = setup({ folders: [A] });
  await t.lifecycle.start();
  await until(() => t.clients[0]?.running === true, 'the server is running');
  const before = t.calls.refreshRuns;

  t.folders.push({ uri: new FakeUri(B) });
  t.lifecycle.onFoldersChanged();
  t.folders.splice(0, 1);
  t.lifecycle.onFoldersChanged();

  assert.equal(t.calls.refreshRuns, before + 2);
  assert.equal(t.clients.length, 1);
  assert.equal(t.clients[0]?.stopped, false);
  const answer = await spec(t.clients[0]).configuration([{ section: 'openprogram.store', scopeUri: new FakeUri(B).toString() }]);
  assert.deepEqual(answer, [''], "the new folder answers with its own (unset: '') store");
});

test('lint and store changes reach the running server without a restart; a new interpreter restarts it', async () => {
  const t = setup({ folders: [A, B] });
  await t.lifecycle.start();
  await until(() => t.clients[0]?.running === true, 'the server is running');
  const client = t.clients[0];

  t.change('', { 'lint.select': ['op2'] });
  assert.deepEqual(client?.notifications, [
    { method: 'workspace/didChangeConfiguration', params: { settings: { openprogram: { lint: { select: ['OP2'] }, store: '' } } } },
  ]);

  // a folder's own value: the window's view is unchanged, the server is told to pull again
  t.change(B, { store: 'elsewhere' });
  assert.equal(client?.notifications.length, 2);

  t.change('', { 'trace.server': 'verbose' });
  assert.deepEqual(client?.traces.at(-1), 'verbose');
  assert.equal(t.clients.length, 1);

  t.change('', { interpreter: '/opt/new/bin/python' });
  await until(() => t.clients.length === 2 && t.clients[1]?.running === true, 'a second server is running');
  assert.equal(client?.stopped, true);
  assert.equal(client?.killed, true);
  assert.equal(spec(t.clients[1]).launch.command, '/opt/new/bin/python');
  assert.ok(t.output.lines.includes('info Restarting the language server: interpreter changed'));
});

test('a crashed server restarts with backoff, then the policy gives up with one error offering a restart', async () => {
  const policy = new RestartPolicy({ maxRestarts: 1, baseDelayMs: 0, maxDelayMs: 0, windowMs: 60_000 });
  const t = setup({ policy });
  await t.lifecycle.start();
  await until(() => t.clients[0]?.running === true, 'the server is running');

  assert.match(spec(t.clients[0]).closed(), /restarting in 0 ms \(attempt 1 of 1\)/);
  await until(() => t.clients[1]?.running === true, 'the server was restarted');

  t.window.choices.push('Restart Server');
  assert.equal(spec(t.clients[1]).closed(), 'Connection to the language server closed; not restarting.');
  const failed = t.window.messages.find((message) => message.level === 'error');
  assert.deepEqual(failed?.actions, ['Show Output', 'Restart Server']);
  assert.match(failed?.text ?? '', /crashed 2 times/);
  assert.ok(t.states.some(([state]) => state === 'failed'));
  // the user clicked Restart Server: a new server, the crash count forgotten
  await until(() => t.clients[2]?.running === true, 'the server was restarted by hand');
  assert.equal(policy.recentCrashes, 0);
  // a close of an old client after a newer one started changes nothing
  assert.equal(spec(t.clients[0]).closed(), 'Connection to the language server closed.');
  assert.equal(t.clients.length, 3);
});

test('an interpreter without OpenProgram starts no server and offers to install it, once', async () => {
  const install = "'/opt/py' -m pip install openprogram";
  const probe: ProbeResult = {
    kind: 'missing-package',
    message: 'OpenProgram: the interpreter "/opt/py" does not have OpenProgram installed.',
    installCommand: install,
  };
  const t = setup({ settings: { '': { interpreter: '/opt/py' } }, probe });
  t.window.choices.push('Install');
  await t.lifecycle.start();
  await until(() => t.window.messages.length === 2, 'the install was started');

  assert.equal(t.clients.length, 0);
  assert.deepEqual(t.window.messages[0], { level: 'error', text: probe.message, actions: ['Install', 'Select Interpreter', 'Open Settings'] });
  assert.deepEqual(t.window.terminals, [{ name: 'OpenProgram install', shown: true, sent: [install] }]);
  assert.deepEqual(t.states.at(-1), ['not-installed', probe.message]);

  // a restart that meets the same problem does not notify again (no notification loops)
  t.lifecycle.restart('crash recovery', false);
  await until(() => t.states.filter(([state]) => state === 'not-installed').length === 2, 'probed again');
  assert.equal(t.window.messages.length, 2);
});

test('Select Interpreter without the Python extension opens the interpreter setting', async () => {
  const t = setup({ probe: { kind: 'no-python', message: 'OpenProgram: Python interpreter "python3" was not found.' } });
  t.window.choices.push('Select Interpreter');
  await t.lifecycle.start();
  await until(() => t.executed.length === 1, 'the settings were opened');
  assert.deepEqual(t.executed, [['workbench.action.openSettings', 'openprogram.interpreter']]);
});

test('server messages are logged and shown as showNotifications says', async () => {
  const t = setup({ settings: { '': { showNotifications: 'onError' } } });
  await t.lifecycle.start();
  await until(() => t.clients[0]?.handlers.has('window/showMessage') === true, 'the server is running');
  const client = t.clients[0];

  client?.notify('window/showMessage', { type: 2, message: 'store is read-only' });
  client?.notify('window/showMessage', { type: 3, message: 'Run pipeline: completed (run 0123456789abcdef) → 20' });
  client?.notify('window/showMessage', { type: 1, message: 'pyproject.toml is broken' });

  assert.deepEqual(
    t.window.messages.map((message) => [message.level, message.text]),
    [
      ['info', 'Run pipeline: completed (run 0123456789abcdef) → 20'],
      ['error', 'pyproject.toml is broken'],
    ],
  );
  assert.ok(t.output.lines.includes('info store is read-only'));

  client?.notify('openprogram/runsChanged', {});
  assert.equal(t.calls.runsChanged, 1);
});

test('server commands the server does not declare are registered and routed to the palette', async () => {
  const t = setup({ declared: ['openprogram.run'] });
  await t.lifecycle.start();
  await until(() => t.clients[0]?.running === true, 'the server is running');
  const client = t.clients[0];
  assert.ok(client !== undefined);
  await until(() => t.commands.size === 2, 'the missing commands are registered');

  assert.deepEqual([...t.commands.keys()], ['openprogram.resume', 'openprogram.showRuns']);
  await t.commands.get('openprogram.resume')?.('0123456789abcdef');
  assert.deepEqual(t.calls.routed, [['openprogram.resume', '0123456789abcdef']]);

  // the client's middleware goes through the palette too
  const sent = await spec(client).executeCommand('openprogram.run', ['file:///ws/a/p.py', 'main', {}], async (command, args) => [command, ...args]);
  assert.deepEqual(sent, ['openprogram.run', 'file:///ws/a/p.py', 'main', {}]);

  await t.lifecycle.dispose();
  assert.equal(t.commands.size, 0, 'disposed with their client');
  assert.equal(client.stopped, true);
  assert.equal(t.lifecycle.runningClient(), undefined);
  assert.equal(await t.lifecycle.request('openprogram/runs', {}), undefined);
  assert.deepEqual(t.states.at(-1), ['stopped', '']);
});

test('a server that fails to start is reported once, with its reason and a way to restart it', async () => {
  const t = setup({ manualStart: true });
  await t.lifecycle.start();
  await until(() => t.clients[0] !== undefined, 'a client was created');
  t.window.choices.push('Show Output');
  t.clients[0]?.failStart(new Error('initialize timed out'));
  await until(() => t.window.messages.length === 1, 'the failure was shown');

  const message = 'The OpenProgram language server failed to start: initialize timed out';
  assert.deepEqual(t.window.messages, [{ level: 'error', text: message, actions: ['Show Output', 'Restart Server'] }]);
  assert.deepEqual(t.states.at(-1), ['failed', message]);
  assert.ok(t.output.lines.includes(`error ${message}`));
  await until(() => t.output.shown === 1, 'the output was shown');
  assert.equal(t.clients.length, 1, 'no restart loop');
});
