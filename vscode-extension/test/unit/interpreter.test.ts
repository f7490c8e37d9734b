import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';

import { defaultInterpreter, describeInterpreter, expandPath, resolveInterpreter } from '../../src/interpreter';

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
