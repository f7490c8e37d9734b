import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import {
  buildServerLaunch,
  classifyProbe,
  describeExit,
  installCommand,
  probeInterpreter,
} from '../../src/serverLaunch';
import { statusView } from '../../src/status';

test('the launch is [interpreter, -m, openprogram_lsp] with an unbuffered UTF-8 env', () => {
  const launch = buildServerLaunch({ interpreter: '/venv/bin/python', baseEnv: { PATH: '/bin' }, cwd: '/w' });
  assert.equal(launch.command, '/venv/bin/python');
  assert.deepEqual(launch.args, ['-m', 'openprogram_lsp']);
  assert.equal(launch.cwd, '/w');
  assert.equal(launch.env.PATH, '/bin');
  assert.equal(launch.env.PYTHONUNBUFFERED, '1');
  assert.equal(launch.env.PYTHONIOENCODING, 'utf-8');
  // the store setting is not exported (it reaches the server as a setting, which can be
  // cleared later); the user's own OPENPROGRAM_STORE passes through unchanged
  assert.equal(launch.env.OPENPROGRAM_STORE, undefined);
  const bare = buildServerLaunch({ interpreter: 'python3', baseEnv: { OPENPROGRAM_STORE: '/mine' } });
  assert.equal(bare.env.OPENPROGRAM_STORE, '/mine');
  assert.equal(bare.cwd, undefined);
});

test('the install command quotes interpreters with spaces', () => {
  assert.equal(installCommand('/venv/bin/python', 'linux'), '/venv/bin/python -m pip install openprogram');
  assert.equal(installCommand('/my env/python', 'linux'), "'/my env/python' -m pip install openprogram");
  assert.equal(installCommand('C:\\My Env\\python.exe', 'win32'), '"C:\\My Env\\python.exe" -m pip install openprogram');
});

test('probe outcomes map to one clear message each', () => {
  const missing = classifyProbe('/venv/bin/python', { exitCode: 1, stderr: "ModuleNotFoundError: No module named 'openprogram_lsp'\n" }, 'linux');
  assert.equal(missing.kind, 'missing-package');
  assert.match(missing.kind === 'missing-package' ? missing.message : '', /Install it with: \/venv\/bin\/python -m pip install openprogram$/);
  const noPython = classifyProbe('python9', { spawnError: 'ENOENT', exitCode: null, stderr: '' });
  assert.equal(noPython.kind, 'no-python');
  assert.match(noPython.kind === 'no-python' ? noPython.message : '', /"python9" was not found.*openprogram\.interpreter/);
  const broken = classifyProbe('py', { exitCode: 1, stderr: 'Traceback...\nImportError: bad thing\n' }, 'linux');
  assert.equal(broken.kind, 'failed');
  assert.match(broken.kind === 'failed' ? broken.message : '', /ImportError: bad thing\. Reinstall with: py -m pip/);
  assert.equal(classifyProbe('py', { exitCode: 0, stderr: '' }).kind, 'ok');
});

test('probing a missing interpreter reports no-python instead of throwing', async () => {
  const result = await probeInterpreter('/nonexistent/dir/python-openprogram-test');
  assert.equal(result.kind, 'no-python');
});

test('probing node as the "interpreter" is a failed import, not ok', async () => {
  // `node -c CODE` is not valid usage: exit code != 0, so the probe must not pass.
  const result = await probeInterpreter(process.execPath);
  assert.notEqual(result.kind, 'ok');
});

test('exit and status texts', () => {
  assert.equal(describeExit(0, null), 'the language server exited');
  assert.equal(describeExit(2, null), 'the language server exited with code 2');
  assert.equal(describeExit(null, 'SIGKILL'), 'the language server was killed by SIGKILL');
  assert.equal(statusView('running').error, false);
  assert.equal(statusView('not-installed', 'x').error, true);
  assert.match(statusView('failed', 'why').tooltip, /why/);
});
