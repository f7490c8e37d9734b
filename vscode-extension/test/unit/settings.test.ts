import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';

import {
  DEFAULT_SETTINGS,
  answerConfiguration,
  answerConfigurationItem,
  classifyChange,
  readSettings,
  toInitializationOptions,
  toServerConfiguration,
  type Settings,
} from '../../src/settings';

function reader(values: Record<string, unknown>): (key: string) => unknown {
  return (key) => values[key];
}

const WS = path.resolve('/work/project');

test('unset settings read as the defaults with no problems', () => {
  const { settings, problems } = readSettings(reader({}));
  assert.deepEqual(settings, DEFAULT_SETTINGS);
  assert.deepEqual(problems, []);
});

test('rule codes are trimmed, upper-cased and de-duplicated', () => {
  const { settings, problems } = readSettings(
    reader({ 'lint.select': [' op2', 'OP203', 'op203', 'ALL'], 'lint.ignore': ['OP108'] }),
  );
  assert.deepEqual(settings.lint, { select: ['OP2', 'OP203', 'ALL'], ignore: ['OP108'] });
  assert.deepEqual(problems, []);
});

test('invalid values fall back to defaults and are reported one line each', () => {
  const { settings, problems } = readSettings(
    reader({ 'lint.select': 'OP203', 'lint.ignore': ['OP1', 7, 'not a code'], interpreter: 3, 'trace.server': 'loud' }),
  );
  assert.deepEqual(settings.lint, { select: [], ignore: ['OP1'] });
  assert.equal(settings.interpreter, '');
  assert.equal(settings.trace, 'off');
  assert.equal(problems.length, 5);
  assert.ok(problems.every((line) => line.startsWith('openprogram.') && !line.includes('\n')));
  assert.match(problems.join('\n'), /openprogram\.lint\.select: expected a list of rule codes, got a string/);
  assert.match(problems.join('\n'), /"not a code"/);
});

test('initialization options carry lint, store and the resolved interpreter', () => {
  const { settings } = readSettings(
    reader({ 'lint.select': ['OP2'], 'lint.ignore': ['OP205'], store: '${workspaceFolder}/.runs', 'trace.server': 'verbose' }),
  );
  assert.deepEqual(toInitializationOptions(settings, '/venv/bin/python', WS), {
    lint: { select: ['OP2'], ignore: ['OP205'] },
    store: path.join(WS, '.runs'),
    interpreter: '/venv/bin/python',
  });
});

test('a postgresql:// store is passed on as written, not resolved as a path', () => {
  for (const url of ['postgresql://app@db.internal/openprogram', 'postgresql:///openprogram?host=/run/postgresql', 'postgres://app:pw@h:5432/db']) {
    const { settings } = readSettings(reader({ store: url }));
    assert.equal(toInitializationOptions(settings, undefined, WS).store, url);
  }
  const { settings } = readSettings(reader({ store: 'runs/postgresql' }));
  assert.equal(toInitializationOptions(settings, undefined, WS).store, path.join(WS, 'runs', 'postgresql'));
});

test('unset values are omitted so the server keeps its own defaults and pyproject config', () => {
  // the store is the exception: '' tells the server to use its default store, also over
  // a store it was given before (a cleared setting takes effect)
  const options = toInitializationOptions(DEFAULT_SETTINGS, undefined);
  assert.deepEqual(options, { lint: {}, store: '' });
  assert.equal(JSON.stringify(options).includes('[]'), false);
  const onlyIgnore = toInitializationOptions({ ...DEFAULT_SETTINGS, lint: { select: [], ignore: ['OP108'] } }, '');
  assert.deepEqual(onlyIgnore, { lint: { ignore: ['OP108'] }, store: '' });
});

test('workspace/configuration answers the section and its sub-sections', async () => {
  const settings: Settings = { ...DEFAULT_SETTINGS, lint: { select: ['OP203'], ignore: [] }, store: '/tmp/s' };
  const config = toServerConfiguration(settings, '/venv/bin/python');
  assert.deepEqual(
    await answerConfiguration(
      [
        { section: 'openprogram' },
        { section: 'openprogram.lint' },
        { section: 'openprogram.lint.select' },
        { section: 'openprogram.store' },
        { section: 'openprogram.nope' },
        { section: 'openprogram.lint.select.0.x' },
        { section: 'openprogram.lint.ignore' },
        { section: 'python' },
        {},
      ],
      () => config,
    ),
    [
      config,
      { select: ['OP203'] },
      ['OP203'],
      '/tmp/s',
      null,
      null,
      null,
      null,
      { openprogram: config },
    ],
  );
  assert.equal(answerConfigurationItem('openprogram.interpreter', config), '/venv/bin/python');
});

test('changes to interpreter, lint or store restart; trace alone does not', () => {
  const base: Settings = { ...DEFAULT_SETTINGS, lint: { select: ['OP2'], ignore: [] } };
  const none = { restart: false, configuration: false, trace: false };
  assert.deepEqual(classifyChange(base, { ...base }), none);
  assert.deepEqual(classifyChange(base, { ...base, trace: 'messages' }), { ...none, trace: true });
  assert.deepEqual(classifyChange(base, { ...base, interpreter: '/x/python' }), { ...none, restart: true });
  assert.deepEqual(classifyChange(base, { ...base, store: '/tmp/s' }), { ...none, configuration: true });
  assert.deepEqual(classifyChange(base, { ...base, lint: { select: ['OP2', 'OP3'], ignore: [] } }), { ...none, configuration: true });
  assert.deepEqual(classifyChange(base, { ...base, lint: { select: ['OP2'], ignore: ['OP205'] } }), { ...none, configuration: true });
  assert.deepEqual(classifyChange(base, { ...base, showNotifications: 'off' }), none);
});

test('each workspace folder is answered with its own resource-scoped settings', async () => {
  const folders: Record<string, Settings> = {
    'file:///ws/alpha': { ...DEFAULT_SETTINGS, lint: { select: [], ignore: ['OP205'] }, store: 'st/runs' },
    'file:///ws/beta': { ...DEFAULT_SETTINGS, interpreter: '.venv/bin/python' },
  };
  const asked: Array<string | undefined> = [];
  const configFor = (scopeUri: string | undefined) => {
    asked.push(scopeUri);
    const settings = scopeUri !== undefined ? folders[scopeUri] ?? DEFAULT_SETTINGS : DEFAULT_SETTINGS;
    const folder = scopeUri !== undefined ? path.resolve(scopeUri.replace('file://', '')) : undefined;
    return toServerConfiguration(settings, settings.interpreter || undefined, folder);
  };
  const answer = await answerConfiguration(
    [
      { section: 'openprogram' },
      { section: 'openprogram', scopeUri: 'file:///ws/alpha' },
      { section: 'openprogram.lint', scopeUri: 'file:///ws/alpha' },
      { section: 'openprogram', scopeUri: 'file:///ws/beta' },
    ],
    configFor,
  );
  assert.deepEqual(answer, [
    { lint: {}, store: '' },
    { lint: { ignore: ['OP205'] }, store: path.resolve('/ws/alpha', 'st/runs') },
    { ignore: ['OP205'] },
    { lint: {}, store: '', interpreter: '.venv/bin/python' },
  ]);
  assert.deepEqual(asked, [undefined, 'file:///ws/alpha', 'file:///ws/beta']); // once per scope
});
