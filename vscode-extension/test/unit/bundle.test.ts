import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { builtinModules } from 'node:module';

const ROOT = path.resolve(__dirname, '..', '..', '..');

test('the bundle needs nothing at run time but vscode and Node built-ins', () => {
  const bundle = fs.readFileSync(path.join(ROOT, 'dist', 'extension.js'), 'utf8');
  const required = new Set([...bundle.matchAll(/\brequire\(["']([^"']+)["']\)/g)].map((m) => m[1] ?? ''));
  const builtins = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);
  const external = [...required].filter((name) => name !== 'vscode' && !builtins.has(name));
  assert.deepEqual(external, []);
  assert.ok(required.has('vscode'));
  assert.match(bundle, /exports\.activate|activate:/);
});

test('package.json contributes every command the extension registers and the settings it reads', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    main: string;
    contributes: { commands: Array<{ command: string }>; configuration: { properties: Record<string, unknown> } };
    activationEvents: string[];
  };
  const source = fs.readFileSync(path.join(ROOT, 'src', 'commands.ts'), 'utf8');
  const clientBlock = /CLIENT_COMMANDS = \{([^}]*)\}/.exec(source)?.[1] ?? '';
  const ids = [...clientBlock.matchAll(/'(openprogram\.[A-Za-z]+)'/g)].map((m) => m[1]);
  assert.equal(ids.length, 13);
  assert.deepEqual(manifest.contributes.commands.map((c) => c.command).sort(), [...ids].sort());
  assert.deepEqual(Object.keys(manifest.contributes.configuration.properties).sort(), [
    'openprogram.interpreter',
    'openprogram.lint.ignore',
    'openprogram.lint.select',
    'openprogram.showNotifications',
    'openprogram.store',
    'openprogram.trace.server',
  ]);
  assert.equal(manifest.main, './dist/extension.js');
  assert.deepEqual(manifest.activationEvents, ['onLanguage:python', 'workspaceContains:**/pyproject.toml']);
});

test('the graph bundle is a browser script with cytoscape inside, and the engine ships the same file', () => {
  const bundle = fs.readFileSync(path.join(ROOT, 'dist', 'graph.js'), 'utf8');
  assert.doesNotMatch(bundle, /\brequire\(["']/);
  assert.match(bundle, /cytoscape/);
  const shipped = fs.readFileSync(path.join(ROOT, '..', 'engine', 'openprogram', 'cli', 'assets', 'run_graph.js'), 'utf8');
  assert.equal(shipped, bundle, 'run `npm run graph-asset` to refresh the copy used by `openprogram show --format html`');
});
