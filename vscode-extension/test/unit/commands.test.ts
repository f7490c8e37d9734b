import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import {
  SERVER_COMMANDS,
  buildResumeArguments,
  buildRunArguments,
  buildShowRunsArguments,
  entriesFromLenses,
  formatCommandResult,
  parseEntryArgs,
  prepareServerCommand,
  resumesFromLenses,
  runNeedsArguments,
  runPickItems,
  runRows,
  runsFromLenses,
  showRunsScopes,
  summarizeResult,
  validateEntryName,
  validateRunId,
  type ResumePolicy,
} from '../../src/commands';

test('empty argument text means no keyword arguments', () => {
  assert.deepEqual(parseEntryArgs(''), { ok: true, value: {} });
  assert.deepEqual(parseEntryArgs('  \n'), { ok: true, value: {} });
});

test('a JSON object is accepted as keyword arguments', () => {
  assert.deepEqual(parseEntryArgs('{"topic": "cats", "n": 3, "deep": {"a": [1]}}'), {
    ok: true,
    value: { topic: 'cats', n: 3, deep: { a: [1] } },
  });
});

test('non-object JSON gets a clear one-line error naming what was typed', () => {
  const cases: Array<[string, RegExp]> = [
    ['[1, 2]', /got an array/],
    ['null', /got null/],
    ['42', /got a number/],
    ['"cats"', /got a string/],
    ['true', /got a boolean/],
  ];
  for (const [text, expected] of cases) {
    const result = parseEntryArgs(text);
    assert.equal(result.ok, false, text);
    if (!result.ok) {
      assert.match(result.error, /^Arguments must be a JSON object/);
      assert.match(result.error, expected);
      assert.ok(!result.error.includes('\n'));
    }
  }
});

test('invalid JSON is reported as such', () => {
  const result = parseEntryArgs('{topic: cats}');
  assert.equal(result.ok, false);
  if (!result.ok) {
    assert.match(result.error, /^Arguments are not valid JSON: /);
  }
});

test('run arguments are [uri, entry, args] and reject bad names', () => {
  assert.deepEqual(buildRunArguments('file:///w/p.py', ' summarize ', { n: 1 }), ['file:///w/p.py', 'summarize', { n: 1 }]);
  assert.deepEqual(buildRunArguments('file:///w/p.py', 'Writer.draft', {}), ['file:///w/p.py', 'Writer.draft', {}]);
  assert.throws(() => buildRunArguments('file:///w/p.py', '1bad', {}), /not a Python name/);
  assert.throws(() => buildRunArguments('', 'main', {}), /document URI/);
  assert.match(validateEntryName('') ?? '', /PROGRAM_ENTRIES/);
});

test('resume arguments: run id, then an options object {policy?, rerunUncertain?, queue?}', () => {
  assert.deepEqual(buildResumeArguments(' 0123456789abcdef '), ['0123456789abcdef']);
  assert.deepEqual(buildResumeArguments('0123456789abcdef', {}), ['0123456789abcdef']);
  assert.deepEqual(buildResumeArguments('0123456789abcdef', { policy: 'use_latest' }), ['0123456789abcdef', { policy: 'use_latest' }]);
  assert.deepEqual(buildResumeArguments('0123456789abcdef', { policy: 'keep_original', rerunUncertain: true }), [
    '0123456789abcdef',
    { policy: 'keep_original', rerunUncertain: true },
  ]);
  assert.deepEqual(buildResumeArguments('0123456789abcdef', { rerunUncertain: true }), ['0123456789abcdef', { rerunUncertain: true }]);
  assert.deepEqual(buildResumeArguments('0123456789abcdef', { rerunUncertain: false }), ['0123456789abcdef', { rerunUncertain: false }]);
  // exactly the shape of the server's "Re-run uncertain" lens
  assert.deepEqual(
    buildResumeArguments('0909090909090909', { rerunUncertain: true }),
    ['0909090909090909', { rerunUncertain: true }],
  );
  assert.throws(() => buildResumeArguments('', { policy: 'use_latest' }), /id of a paused run/);
  assert.throws(() => buildResumeArguments('0123456789abcdef', { policy: 'newest' as ResumePolicy }), /Unknown resume policy "newest"/);
  // on the workers of a queue (`resume --queue`)
  assert.deepEqual(buildResumeArguments('0123456789abcdef', { queue: 'reports', rerunUncertain: true }), [
    '0123456789abcdef',
    { rerunUncertain: true, queue: 'reports' },
  ]);
  assert.throws(() => buildResumeArguments('0123456789abcdef', { queue: ' ' }), /A queue needs a name/);
  assert.match(validateRunId('a b') ?? '', /no spaces/);
  assert.match(validateRunId('--all-interrupted') ?? '', /not a run id/);
  assert.equal(validateRunId('0123456789abcdef'), undefined);
});

test('the server commands include approve and deny (registered with the language client)', () => {
  assert.deepEqual(Object.values(SERVER_COMMANDS), [
    'openprogram.run',
    'openprogram.resume',
    'openprogram.approve',
    'openprogram.deny',
    'openprogram.showRuns',
  ]);
});

test('show-runs arguments: (uri?, function?), nothing for the whole workspace', () => {
  assert.deepEqual(buildShowRunsArguments(), []);
  assert.deepEqual(buildShowRunsArguments(''), []);
  assert.deepEqual(buildShowRunsArguments('file:///w/p.py'), ['file:///w/p.py']);
  assert.deepEqual(buildShowRunsArguments('file:///w/p.py', 'Reporter.report'), ['file:///w/p.py', 'Reporter.report']);
  assert.deepEqual(buildShowRunsArguments(undefined, 'main'), [null, 'main']);
  assert.deepEqual(buildShowRunsArguments('file:///w/p.py', ''), ['file:///w/p.py']);
});

test('show-runs scopes: the file, its functions with runs, then the workspace', () => {
  const lenses = [
    { command: { title: '▶ Run', command: SERVER_COMMANDS.run, arguments: ['file:///w/p.py', 'main'] } },
    { command: { title: 'Runs (2)', command: SERVER_COMMANDS.showRuns, arguments: ['file:///w/p.py', 'report'] } },
  ];
  assert.deepEqual(showRunsScopes('file:///w/p.py', 'p.py', lenses), [
    { label: 'Runs of p.py', args: ['file:///w/p.py'] },
    { label: 'Runs (2) — report', args: ['file:///w/p.py', 'report'] },
    { label: 'All runs in the workspace', args: [] },
  ]);
  assert.deepEqual(showRunsScopes(undefined, undefined, []), [{ label: 'All runs in the workspace', args: [] }]);
});

test('a ▶ Run lens (uri + entry) gets the typed arguments object before reaching the server', async () => {
  const asked: string[] = [];
  const prompt = async (entry: string) => {
    asked.push(entry);
    return { text: 'hi' };
  };
  // the server's lens command: [uri, entry]
  assert.deepEqual(await prepareServerCommand(SERVER_COMMANDS.run, ['file:///w/p.py', 'summarize'], prompt), [
    'file:///w/p.py',
    'summarize',
    { text: 'hi' },
  ]);
  assert.deepEqual(asked, ['summarize']);
  // cancelled input box: nothing is sent
  assert.equal(await prepareServerCommand(SERVER_COMMANDS.run, ['file:///w/p.py', 'main'], async () => undefined), undefined);
  // arguments already there (palette Run Entry…), other commands: passed through untouched
  const never = async (): Promise<undefined> => {
    throw new Error('must not prompt');
  };
  assert.deepEqual(await prepareServerCommand(SERVER_COMMANDS.run, ['file:///w/p.py', 'main', { n: 1 }], never), [
    'file:///w/p.py',
    'main',
    { n: 1 },
  ]);
  assert.deepEqual(await prepareServerCommand(SERVER_COMMANDS.resume, ['0123456789abcdef', { rerunUncertain: true }], never), [
    '0123456789abcdef',
    { rerunUncertain: true },
  ]);
  assert.deepEqual(await prepareServerCommand(SERVER_COMMANDS.showRuns, [], never), []);
  // malformed lens: left for the server's usage error
  assert.deepEqual(await prepareServerCommand(SERVER_COMMANDS.run, [42], never), [42]);
});

test('runs returned by showRuns become quick-pick items; resumable ones are marked', () => {
  const rows = runRows([
    { run_id: 'run-a', function: 'Reporter.report', status: 'paused', paused_step: 'fetch', error: null, resumable: true },
    { run_id: 'run-b', function: 'main', status: 'failed', paused_step: null, error: 'boom', resumable: false },
    { status: 'broken' },
    null,
  ]);
  assert.deepEqual(rows.map((r) => r.run_id), ['run-a', 'run-b']);
  assert.deepEqual(runPickItems(rows), [
    {
      label: '$(debug-pause) run-a',
      description: 'paused at step "fetch" — Reporter.report',
      detail: 'Select to resume',
      runId: 'run-a',
      resumable: true,
    },
    { label: 'run-b', description: 'failed — main', detail: 'boom', runId: 'run-b', resumable: false },
  ]);
  assert.deepEqual(runRows({ status: 'error' }), []);
});

test('entries and paused runs are read from the server lenses', () => {
  const lenses = [
    { command: { title: '▶ Run', command: SERVER_COMMANDS.run, arguments: ['file:///w/p.py', 'main'] } },
    { command: { title: '▶ Run', command: SERVER_COMMANDS.run, arguments: ['file:///w/p.py', 'main'] } },
    { command: { title: '▶ Run', command: SERVER_COMMANDS.run, arguments: ['file:///w/p.py', 'other', {}] } },
    { command: { title: '⟳ Resume (fetch)', command: SERVER_COMMANDS.resume, arguments: ['run-7', { rerunUncertain: true }] } },
    { command: { title: 'Runs (3)', command: SERVER_COMMANDS.showRuns, arguments: ['file:///w/p.py'] } },
    { command: { title: 'broken', command: SERVER_COMMANDS.run, arguments: [42] } },
    { command: null },
    {},
  ];
  assert.deepEqual(entriesFromLenses(lenses), [
    { entry: 'main', uri: 'file:///w/p.py', title: '▶ Run' },
    { entry: 'other', uri: 'file:///w/p.py', title: '▶ Run' },
  ]);
  assert.deepEqual(resumesFromLenses(lenses), [{ runId: 'run-7', title: '⟳ Resume (fetch)', args: ['run-7', { rerunUncertain: true }] }]);
  assert.deepEqual(runsFromLenses(lenses), [{ title: 'Runs (3)', args: ['file:///w/p.py'] }]);
  assert.deepEqual(
    runsFromLenses([{ command: { title: 'Runs (2)', command: SERVER_COMMANDS.showRuns, arguments: ['file:///w/p.py', 'report'] } }]),
    [{ title: 'Runs (2) — report', args: ['file:///w/p.py', 'report'] }],
  );
  assert.deepEqual(entriesFromLenses(null), []);
});

test('a lens without arguments object still needs them typed', () => {
  assert.equal(runNeedsArguments(['file:///w/p.py', 'main']), true);
  assert.equal(runNeedsArguments(['file:///w/p.py', 'main', null]), true);
  assert.equal(runNeedsArguments(['file:///w/p.py', 'main', {}]), false);
});

test('results are formatted for the output channel and summarised', () => {
  assert.equal(formatCommandResult('openprogram.run', null), 'openprogram.run: done');
  assert.equal(formatCommandResult('openprogram.run', 'plain text'), 'plain text');
  assert.match(formatCommandResult('openprogram.run', { run_id: 'r' }), /"run_id": "r"/);
  assert.equal(summarizeResult({ run_id: 'r1', status: 'completed', result: 3 }), 'Run r1: completed');
  assert.equal(summarizeResult({ run_id: 'r2', status: 'paused', paused_step: 'fetch' }), 'Run r2: paused at step "fetch"');
  assert.equal(summarizeResult({ run_id: 'r3', status: 'failed', error: 'boom' }), 'Run r3: failed — boom');
  assert.equal(summarizeResult([1]), undefined);
  assert.equal(summarizeResult({ runs: [] }), undefined);
});
