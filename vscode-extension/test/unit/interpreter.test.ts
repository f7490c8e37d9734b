import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';

import {
  activeEnvironmentExecutable,
  chosenInterpreter,
  defaultInterpreter,
  describeInterpreter,
  discoverInterpreter,
  expandPath,
  resolveInterpreter,
  type PythonEnvironments,
} from '../../src/interpreter';

const WS = path.resolve('/work/project');
const HOME = path.resolve('/home/ada');

test('the setting wins over the Python extension and the default', () => {
  const resolved = resolveInterpreter({ setting: '/opt/py/bin/python', pythonExtensionPath: '/venv/bin/python', platform: 'linux' });
  assert.deepEqual(resolved, { command: '/opt/py/bin/python', source: 'setting' });
});

test('the Python extension environment is used when the setting is empty or blank', () => {
  for (const setting of [undefined, '', '   ']) {
    const resolved = resolveInterpreter({ setting, pythonExtensionPath: '/venv/bin/python', platform: 'linux' });
    assert.deepEqual(resolved, { command: '/venv/bin/python', source: 'python-extension' });
  }
});

test('python3 is the default on POSIX, python on Windows', () => {
  assert.deepEqual(resolveInterpreter({ platform: 'linux' }), { command: 'python3', source: 'default' });
  assert.deepEqual(resolveInterpreter({ platform: 'darwin', pythonExtensionPath: '' }), { command: 'python3', source: 'default' });
  assert.deepEqual(resolveInterpreter({ platform: 'win32' }), { command: 'python', source: 'default' });
  assert.equal(defaultInterpreter('linux'), 'python3');
});

test('${workspaceFolder}, ~ and relative paths are expanded against the workspace', () => {
  const fromVar = resolveInterpreter({ setting: '${workspaceFolder}/.venv/bin/python', workspaceFolder: WS, homeDir: HOME });
  assert.equal(fromVar.command, `${WS}/.venv/bin/python`);
  const fromHome = resolveInterpreter({ setting: '~/envs/op/bin/python', workspaceFolder: WS, homeDir: HOME });
  assert.equal(fromHome.command, path.join(HOME, 'envs/op/bin/python'));
  const relative = resolveInterpreter({ setting: '.venv/bin/python', workspaceFolder: WS, homeDir: HOME });
  assert.equal(relative.command, path.join(WS, '.venv/bin/python'));
});

test('a bare command name stays a PATH lookup', () => {
  assert.equal(expandPath('python3.11', WS, HOME), 'python3.11');
  assert.equal(resolveInterpreter({ setting: ' python3.12 ', workspaceFolder: WS }).command, 'python3.12');
});

test('a relative path without a workspace folder is left as typed', () => {
  assert.equal(expandPath('.venv/bin/python', undefined, HOME), '.venv/bin/python');
});

test('the description names where the interpreter came from', () => {
  assert.match(describeInterpreter({ command: 'python3', source: 'default' }), /default/);
  assert.match(describeInterpreter({ command: '/x/python', source: 'setting' }), /openprogram\.interpreter/);
  assert.match(describeInterpreter({ command: '/x/python', source: 'python-extension' }), /Python extension/);
});

/** The Python extension's environments API as it answers: one environment per folder. */
function environments(byFolder: Record<string, string>, resolvedTo?: (p: string) => string): PythonEnvironments<string> {
  return {
    getActiveEnvironmentPath: (folder?: string) => {
      const found = folder !== undefined ? byFolder[folder] : undefined;
      return found === undefined ? undefined : { id: found, path: found };
    },
    resolveEnvironment:
      resolvedTo === undefined
        ? undefined
        : async (env) => ({ executable: { uri: { fsPath: resolvedTo(typeof env === 'string' ? env : env.path) } } }),
  };
}

test('each folder gets the Python extension environment chosen for it', async () => {
  const envs = environments({ '/ws/a': '/ws/a/.venv', '/ws/b': '/opt/conda/envs/b' }, (p) => `${p}/bin/python`);
  const a = await discoverInterpreter({ setting: '', folder: { path: '/ws/a', resource: '/ws/a' }, environments: envs });
  const b = await discoverInterpreter({ setting: '', folder: { path: '/ws/b', resource: '/ws/b' }, environments: envs });
  assert.deepEqual(a, { command: '/ws/a/.venv/bin/python', source: 'python-extension' });
  assert.deepEqual(b, { command: '/opt/conda/envs/b/bin/python', source: 'python-extension' });
  assert.equal(chosenInterpreter(a), '/ws/a/.venv/bin/python');
});

test("a folder's interpreter setting wins and is expanded against that folder", async () => {
  let asked = 0;
  const envs: PythonEnvironments<string> = {
    getActiveEnvironmentPath: () => {
      asked += 1;
      return { id: 'x', path: '/x/python' };
    },
  };
  const got = await discoverInterpreter({
    setting: '${workspaceFolder}/.venv/bin/python',
    folder: { path: WS, resource: WS },
    environments: envs,
  });
  assert.deepEqual(got, { command: path.join(WS, '.venv/bin/python'), source: 'setting' });
  assert.equal(asked, 0); // the Python extension is not consulted when the setting is set
});

test('without the Python extension, or when it fails, the default is used (and not sent to the server)', async () => {
  const none = await discoverInterpreter({ setting: '', folder: undefined, environments: undefined, platform: 'linux' });
  assert.deepEqual(none, { command: 'python3', source: 'default' });
  assert.equal(chosenInterpreter(none), undefined);
  const warnings: string[] = [];
  const broken: PythonEnvironments<string> = {
    getActiveEnvironmentPath: () => {
      throw new Error('not ready');
    },
  };
  assert.equal(await activeEnvironmentExecutable(broken, '/ws/a', (m) => warnings.push(m)), undefined);
  assert.match(warnings[0] ?? '', /not ready/);
  // an environment without a resolvable executable falls back to its path
  assert.equal(await activeEnvironmentExecutable(environments({ '/ws/a': '/ws/a/.venv/bin/python' }), '/ws/a'), '/ws/a/.venv/bin/python');
  assert.equal(await activeEnvironmentExecutable(environments({}), '/ws/z'), undefined);
});
