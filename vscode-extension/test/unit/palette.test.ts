import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { Palette } from '../../src/palette';
import type { EntrySignature } from '../../src/entryArgs';
import { FakeLanguageClient, FakeOutput, FakeUri, FakeWindow } from './fakeVscode';

const FILE = new FakeUri('/ws/pipeline.py');
const FILE_URI = FILE.toString();
const RUN_ID = '0123456789abcdef';
const MODES = [
  'Resume with the original code (keep_original)',
  'Resume with the latest code (use_latest)',
  'Resume and re-run the uncertain step',
];

// What the server answers for `def pipeline(n: int, label: str = "x")`.
const SIGNATURE: EntrySignature = {
  entry: 'pipeline',
  params: [
    { name: 'n', annotation: 'int', required: true, default: null },
    { name: 'label', annotation: 'str', required: false, default: 'x' },
  ],
  template: { n: 0, label: 'x' },
};

function lens(command: string, args: unknown[], title = command): { command: { title: string; command: string; arguments: unknown[] } } {
  return { command: { title, command, arguments: args } };
}

/** A palette over a fake window, an open Python file and a running fake server. */
function setup(options: { document?: { uri: FakeUri; languageId: string } | undefined; running?: boolean; checkArgsMs?: number } = {}) {
  const saved: string[] = [];
  const window = new FakeWindow();
  const output = new FakeOutput();
  const client = new FakeLanguageClient();
  client.running = options.running ?? true;
  const memory = new Map<string, unknown>();
  const calls = { refreshRuns: 0, graphs: [] as string[], clipboard: [] as string[] };
  const document = 'document' in options ? options.document : { uri: FILE, languageId: 'python' };
  const palette = new Palette({
    window,
    activeDocument: () => document,
    relativePath: (uri) => uri.fsPath.replace('/ws/', ''),
    clipboard: {
      writeText: async (text) => {
        calls.clipboard.push(text);
      },
    },
    memory: {
      get: <T>(key: string) => memory.get(key) as T | undefined,
      update: async (key, value) => {
        memory.set(key, value);
      },
    },
    output,
    client: () => (client.running ? client : undefined),
    refreshRuns: () => {
      calls.refreshRuns++;
    },
    showGraph: async (runId) => {
      calls.graphs.push(runId);
    },
    checkArgsMs: options.checkArgsMs,
    saveDocument: async (uri) => {
      saved.push(uri);
      return true;
    },
  });
  return { palette, window, output, client, memory, calls, saved };
}

test('Resume Run with no paused run in the file asks for a run id, validates it, offers the modes, and sends exactly these arguments', async () => {
  const { palette, window, client } = setup();
  client.answers['textDocument/codeLens'] = [lens('openprogram.run', [FILE_URI, 'pipeline'], '▶ Run pipeline')];
  window.inputs.push(['not a run', RUN_ID.toUpperCase(), RUN_ID]);
  window.picks.push(MODES[1]);

  await palette.resumeRun();

  assert.equal(window.inputsShown.length, 1);
  assert.equal(window.inputsShown[0]?.title, 'Resume run');
  assert.deepEqual(window.inputsShown[0]?.rejected, [
    'A run id contains no spaces',
    '"0123456789ABCDEF" is not a run id (16 lowercase hex digits)',
  ]);
  assert.deepEqual(window.picksShown, [{ title: `Resume ${RUN_ID}`, labels: MODES }]);
  assert.deepEqual(client.executed(), [['openprogram.resume', RUN_ID, { policy: 'use_latest' }]]);
});

test('Resume Run offers the paused runs of the file\'s ⟳ Resume lenses; re-running the uncertain step sends rerunUncertain', async () => {
  const { palette, window, client } = setup();
  client.answers['textDocument/codeLens'] = [
    lens('openprogram.resume', [RUN_ID], '⟳ Resume (step "finish" #0)'),
    lens('openprogram.resume', [RUN_ID], 'duplicate'),
  ];
  window.picks.push(RUN_ID, MODES[2]);

  await palette.resumeRun();

  assert.deepEqual(window.picksShown[0], { title: 'Resume run', labels: [RUN_ID, '$(edit) Enter a run id…'] });
  assert.equal(window.inputsShown.length, 0);
  assert.deepEqual(client.executed(), [['openprogram.resume', RUN_ID, { rerunUncertain: true }]]);
});

test('a cancelled pick sends nothing', async () => {
  const cancelRun = setup();
  cancelRun.client.answers['textDocument/codeLens'] = [lens('openprogram.resume', [RUN_ID])];
  cancelRun.window.picks.push(undefined);
  await cancelRun.palette.resumeRun();
  assert.deepEqual(cancelRun.client.executed(), []);
  assert.equal(cancelRun.window.inputsShown.length, 0, 'Escape on the run pick does not ask for an id instead');

  const cancelMode = setup();
  cancelMode.window.inputs.push([RUN_ID]);
  cancelMode.window.picks.push(undefined);
  await cancelMode.palette.resumeRun();
  assert.equal(cancelMode.window.picksShown.length, 1);
  assert.deepEqual(cancelMode.client.executed(), []);

  const cancelEntry = setup();
  cancelEntry.client.answers['textDocument/codeLens'] = [lens('openprogram.run', [FILE_URI, 'pipeline'])];
  cancelEntry.window.picks.push(undefined);
  await cancelEntry.palette.runEntry();
  assert.deepEqual(
    cancelEntry.client.requests.map((sent) => sent.method),
    ['textDocument/codeLens'],
    'no signature asked for, nothing run',
  );

  const cancelArgs = setup();
  cancelArgs.client.answers['textDocument/codeLens'] = [lens('openprogram.run', [FILE_URI, 'pipeline'])];
  cancelArgs.window.picks.push('pipeline');
  cancelArgs.window.inputs.push(undefined);
  await cancelArgs.palette.runEntry();
  assert.deepEqual(cancelArgs.client.executed(), []);
  assert.equal(cancelArgs.memory.size, 0);
});

test('Run Entry picks an entry of the file, pre-fills its arguments from the signature, remembers what was typed', async () => {
  const { palette, window, client } = setup();
  client.answers['textDocument/codeLens'] = [
    lens('openprogram.run', [FILE_URI, 'pipeline'], '▶ Run pipeline'),
    lens('openprogram.run', [FILE_URI, 'report'], '▶ Run report'),
    lens('openprogram.showRuns', [FILE_URI, 'pipeline'], 'Runs (2)'),
  ];
  client.answers['openprogram/entrySignature'] = (params: unknown) => {
    assert.deepEqual(params, { uri: FILE_URI, entry: 'pipeline' });
    return SIGNATURE;
  };
  client.answers['openprogram/checkEntryArgs'] = (params: unknown) => {
    const { uri, entry, args } = params as { uri: string; entry: string; args: string };
    assert.deepEqual([uri, entry], [FILE_URI, 'pipeline']);
    return { problems: args.includes('three') ? ['argument \'n\' expects int, got string "three"'] : [] };
  };
  window.picks.push('pipeline');
  window.inputs.push(['{"n": "three"}', '{"n": 3}']);

  await palette.runEntry();

  assert.deepEqual(window.picksShown, [{ title: 'Run entry', labels: ['pipeline', 'report'] }]);
  const prompt = window.inputsShown[0];
  assert.equal(prompt?.title, 'Run pipeline');
  assert.equal(prompt?.prompt, 'pipeline(n: int, label: str = "x")');
  assert.equal(prompt?.value, '{"n":0,"label":"x"}');
  assert.deepEqual(prompt?.rejected, ['argument \'n\' expects int, got string "three"'], 'the server\'s words');
  assert.deepEqual(
    client.requests.filter((sent) => sent.method === 'openprogram/checkEntryArgs').map((sent) => sent.params),
    [
      { uri: FILE_URI, entry: 'pipeline', args: '{"n": "three"}' },
      { uri: FILE_URI, entry: 'pipeline', args: '{"n": 3}' },
    ],
  );
  assert.deepEqual(client.executed(), [['openprogram.run', FILE_URI, 'pipeline', { n: 3 }]]);

  window.picks.push('pipeline');
  window.inputs.push(['{"n": 4}']);
  await palette.runEntry();
  assert.equal(window.inputsShown[1]?.value, '{"n": 3}', 'the arguments typed last time');
  assert.deepEqual(client.executed()[1], ['openprogram.run', FILE_URI, 'pipeline', { n: 4 }]);
});

test('the arguments prompt does not wait for a server that does not answer, nor for one that fails', async () => {
  const { palette, window, client, output } = setup({ checkArgsMs: 5 });
  client.answers['openprogram/entrySignature'] = SIGNATURE;
  client.answers['openprogram/checkEntryArgs'] = () => new Promise(() => undefined); // busy: never answers
  window.inputs.push(['{"n": "three"}']);

  assert.deepEqual(await palette.promptEntryArgs('pipeline', FILE_URI), { n: 'three' });
  assert.deepEqual(window.inputsShown[0]?.rejected, []);
  assert.ok(output.lines.some((line) => /^warn openprogram\/checkEntryArgs: no answer within 5 ms/.test(line)), output.lines.join('\n'));

  client.answers['openprogram/checkEntryArgs'] = () => {
    throw new Error('Unhandled method openprogram/checkEntryArgs');
  };
  window.inputs.push(['{"n": "four"}']);
  assert.deepEqual(await palette.promptEntryArgs('pipeline', FILE_URI), { n: 'four' });
  assert.ok(output.lines.includes('warn openprogram/checkEntryArgs failed: Unhandled method openprogram/checkEntryArgs'));

  // Text that is no JSON object is refused here, without asking the server.
  const asked = client.requests.length;
  window.inputs.push(['{"n": ', '{"n": 1}']);
  await palette.promptEntryArgs('pipeline', FILE_URI);
  assert.match(window.inputsShown[2]?.rejected[0] ?? '', /^Arguments are not valid JSON/);
  assert.deepEqual(
    client.requests.slice(asked).map((sent) => sent.method),
    ['openprogram/entrySignature', 'openprogram/checkEntryArgs'],
  );
});

test('Run Entry in a file without PROGRAM_ENTRIES asks for the entry name', async () => {
  const { palette, window, client } = setup();
  client.answers['textDocument/codeLens'] = [];
  window.inputs.push(['not a name!', 'main'], ['']);

  await palette.runEntry();

  assert.equal(window.picksShown.length, 0);
  assert.deepEqual(window.inputsShown[0]?.rejected, ['"not a name!" is not a Python name (e.g. "summarize" or "Writer.draft")']);
  assert.deepEqual(client.executed(), [['openprogram.run', FILE_URI, 'main', {}]]);
});

test('without a running server or a Python file the commands say so and send nothing', async () => {
  const stopped = setup({ running: false });
  await stopped.palette.runEntry();
  await stopped.palette.resumeRun();
  await stopped.palette.showRuns();
  assert.equal(stopped.window.messages.length, 3);
  assert.match(stopped.window.messages[0]?.text ?? '', /language server is not running/);
  assert.deepEqual(stopped.client.requests, []);

  const noFile = setup({ document: undefined });
  await noFile.palette.runEntry();
  assert.deepEqual(noFile.window.messages, [
    { level: 'info', text: 'Open a Python file with PROGRAM_ENTRIES to run an entry.', actions: [] },
  ]);
  assert.deepEqual(noFile.client.requests, []);
});

test('Show Runs offers the file, its functions and the workspace; a paused run picked from the list is resumed', async () => {
  const { palette, window, client } = setup();
  client.answers['textDocument/codeLens'] = [lens('openprogram.showRuns', [FILE_URI, 'pipeline'], 'Runs (2)')];
  client.answers['workspace/executeCommand'] = (params: unknown) => {
    const { command } = params as { command: string };
    if (command !== 'openprogram.showRuns') {
      return { run_id: RUN_ID, status: 'completed' };
    }
    return [
      { run_id: RUN_ID, function: 'pipeline', status: 'paused', paused_step: 'finish', resumable: true },
      { run_id: 'fedcba9876543210', function: 'pipeline', status: 'completed' },
    ];
  };
  window.picks.push('Runs (2) — pipeline', `$(debug-pause) ${RUN_ID}`, MODES[0]);

  await palette.showRuns();

  assert.deepEqual(window.picksShown[0], {
    title: 'Show runs',
    labels: ['Runs of pipeline.py', 'Runs (2) — pipeline', 'All runs in the workspace'],
  });
  assert.deepEqual(window.picksShown[1]?.labels, [`$(debug-pause) ${RUN_ID}`, 'fedcba9876543210']);
  assert.deepEqual(client.executed(), [
    ['openprogram.showRuns', FILE_URI, 'pipeline'],
    ['openprogram.resume', RUN_ID, { policy: 'keep_original' }],
  ]);
});

test('Show Runs without a Python file lists the workspace at once; an unsaved file is not a scope', async () => {
  const { palette, window, client } = setup({ document: { uri: new FakeUri('Untitled-1', 'untitled'), languageId: 'python' } });
  client.answers['workspace/executeCommand'] = [];

  await palette.showRuns();

  assert.equal(window.picksShown.length, 0);
  assert.deepEqual(client.executed(), [['openprogram.showRuns']]);
  assert.deepEqual(
    client.requests.map((sent) => sent.method),
    ['workspace/executeCommand'],
  );
});

test('a ▶ Run lens gets its arguments typed before the server runs it; Escape runs nothing', async () => {
  const { palette, window, client, output } = setup();
  client.answers['openprogram/entrySignature'] = SIGNATURE;
  const forwarded: unknown[][] = [];
  const next = async (command: string, args: unknown[]): Promise<unknown> => {
    forwarded.push([command, ...args]);
    return { run_id: RUN_ID, status: 'completed', result: 20 };
  };

  window.inputs.push(['{"n": 19}']);
  const result = await palette.viaMiddleware('openprogram.run', [FILE_URI, 'pipeline'], next);
  assert.deepEqual(forwarded, [['openprogram.run', FILE_URI, 'pipeline', { n: 19 }]]);
  assert.deepEqual(result, { run_id: RUN_ID, status: 'completed', result: 20 });
  assert.ok(output.lines.includes(`info openprogram.run: Run ${RUN_ID}: completed`));

  window.inputs.push(undefined);
  assert.equal(await palette.viaMiddleware('openprogram.run', [FILE_URI, 'pipeline'], next), undefined);
  assert.equal(forwarded.length, 1);

  // a ⟳ Resume lens carries all its arguments: forwarded as they are, nothing asked
  await palette.viaMiddleware('openprogram.resume', [RUN_ID, { policy: 'keep_original' }], next);
  assert.deepEqual(forwarded[1], ['openprogram.resume', RUN_ID, { policy: 'keep_original' }]);
  assert.equal(window.inputsShown.length, 2);
});

test('a lens command the server did not declare is sent by the palette itself', async () => {
  const { palette, window, client } = setup();
  client.answers['workspace/executeCommand'] = [{ run_id: RUN_ID, status: 'paused', resumable: true }];
  window.picks.push(undefined);

  await palette.viaCommand('openprogram.showRuns', [FILE_URI]);
  await new Promise((resolve) => setImmediate(resolve));

  assert.deepEqual(client.executed(), [['openprogram.showRuns', FILE_URI]]);
  assert.deepEqual(window.picksShown.map((pick) => pick.title), ['Runs (1)']);
});

test('a failing server command is logged and shown, not thrown', async () => {
  const { palette, window, client, output } = setup();
  client.answers['workspace/executeCommand'] = () => {
    throw new Error('unknown run 0123456789abcdef');
  };
  window.inputs.push([RUN_ID]);
  window.picks.push(MODES[0]);

  await palette.resumeRun();

  assert.deepEqual(window.messages, [{ level: 'error', text: 'OpenProgram: unknown run 0123456789abcdef', actions: [] }]);
  assert.ok(output.lines.includes('error openprogram.resume failed: unknown run 0123456789abcdef'));
});

test('the Runs view actions work on the item\'s run, or ask for a run id from the palette', async () => {
  const { palette, window, client, calls } = setup();
  const node = { kind: 'run', run: { id: RUN_ID } };
  client.answers['openprogram/cancelRun'] = { error: 'run 0123456789abcdef is not running' };

  await palette.cancelRun(node);
  assert.deepEqual(client.requests, [{ method: 'openprogram/cancelRun', params: { runId: RUN_ID } }]);
  assert.deepEqual(window.messages, [{ level: 'error', text: 'OpenProgram: run 0123456789abcdef is not running', actions: [] }]);
  assert.equal(calls.refreshRuns, 1);

  await palette.copyRunId({ kind: 'step', run: { id: RUN_ID } });
  assert.deepEqual(calls.clipboard, [RUN_ID]);
  assert.deepEqual(window.statusBar, [`Copied run id ${RUN_ID}`]);

  window.inputs.push([` ${RUN_ID} `]);
  await palette.showRunGraph(undefined);
  assert.equal(window.inputsShown[0]?.title, 'Run id');
  assert.deepEqual(calls.graphs, [RUN_ID]);

  window.picks.push(MODES[1]);
  await palette.resumeFromView(node);
  assert.deepEqual(client.executed(), [['openprogram.resume', RUN_ID, { policy: 'use_latest' }]]);
});

test('Cancel Run says when the cancel is only requested (another process executes the run), then refreshes', async () => {
  const { palette, window, client, calls } = setup();
  const node = { kind: 'run', run: { id: RUN_ID } };
  client.answers['openprogram/cancelRun'] = { status: 'running', cancel: 'requested' };

  await palette.cancelRun(node);
  assert.deepEqual(client.requests, [{ method: 'openprogram/cancelRun', params: { runId: RUN_ID } }]);
  assert.deepEqual(window.messages, [
    { level: 'info', text: `cancel requested: the process executing run ${RUN_ID} stops at its next step`, actions: [] },
  ]);
  assert.equal(calls.refreshRuns, 1);

  client.answers['openprogram/cancelRun'] = { status: 'cancelled', cancel: 'cancelled' };
  await palette.cancelRun(node);
  assert.equal(window.messages.length, 1, 'a done cancel shows in the Runs view, without a message');
  assert.equal(calls.refreshRuns, 2);
});

test('Cancel Run of a run without a safe point asks before ending its process, then cancels it with kill', async () => {
  const { palette, window, client, calls } = setup();
  const node = { kind: 'run', run: { id: RUN_ID } };
  const refused = { error: `run ${RUN_ID} cannot be cancelled at a safe point: …`, canKill: true };
  const ask = {
    level: 'warning',
    text: `Run ${RUN_ID} cannot stop at a safe point: its entry is not resumable. End its process?`,
    actions: ['End process'],
    modal: true,
  };
  client.answers['openprogram/cancelRun'] = (params: unknown) =>
    (params as { kill?: boolean }).kill === true ? { status: 'cancelled', cancel: 'cancelled' } : refused;

  window.choices.push(undefined); // Cancel on the dialog: nothing is killed, nothing more said
  await palette.cancelRun(node);
  assert.deepEqual(client.requests, [{ method: 'openprogram/cancelRun', params: { runId: RUN_ID } }]);
  assert.deepEqual(window.messages, [ask]);
  assert.equal(calls.refreshRuns, 1);

  window.choices.push('End process');
  await palette.cancelRun(node);
  assert.deepEqual(client.requests.slice(1), [
    { method: 'openprogram/cancelRun', params: { runId: RUN_ID } },
    { method: 'openprogram/cancelRun', params: { runId: RUN_ID, kill: true } },
  ]);
  assert.deepEqual(window.messages, [ask, ask], 'a done cancel shows in the Runs view, without a message');
  assert.equal(calls.refreshRuns, 2);

  // the kill refused (a process of another machine): its error is shown as is
  client.answers['openprogram/cancelRun'] = (params: unknown) =>
    (params as { kill?: boolean }).kill === true ? { error: `run ${RUN_ID} executes in process 7 on elsewhere` } : refused;
  window.choices.push('End process');
  await palette.cancelRun(node);
  assert.deepEqual(window.messages.slice(2), [ask, { level: 'error', text: `OpenProgram: run ${RUN_ID} executes in process 7 on elsewhere`, actions: [] }]);
  assert.equal(calls.refreshRuns, 3);

  // a pause is never turned into a kill
  client.answers['openprogram/pauseRun'] = { error: `run ${RUN_ID} cannot be paused`, canKill: true };
  await palette.pauseRun(node);
  assert.deepEqual(client.requests.at(-1), { method: 'openprogram/pauseRun', params: { runId: RUN_ID } });
  assert.deepEqual(window.messages.at(-1), { level: 'error', text: `OpenProgram: run ${RUN_ID} cannot be paused`, actions: [] });
});

test('Pause Run says when the pause is only requested, shows an error as is, then refreshes', async () => {
  const { palette, window, client, calls } = setup();
  const node = { kind: 'run', run: { id: RUN_ID } };
  client.answers['openprogram/pauseRun'] = { status: 'running', pause: 'requested' };

  await palette.pauseRun(node);
  assert.deepEqual(client.requests, [{ method: 'openprogram/pauseRun', params: { runId: RUN_ID } }]);
  assert.deepEqual(window.messages, [
    { level: 'info', text: `pause requested: the process executing run ${RUN_ID} pauses it before its next step`, actions: [] },
  ]);
  assert.equal(calls.refreshRuns, 1);

  client.answers['openprogram/pauseRun'] = { status: 'paused', pause: 'paused' };
  await palette.pauseRun(node);
  assert.equal(window.messages.length, 1, 'a done pause shows in the Runs view, without a message');

  client.answers['openprogram/pauseRun'] = { error: 'run 0123456789abcdef is completed and cannot be paused' };
  await palette.pauseRun(node);
  assert.deepEqual(window.messages[1], { level: 'error', text: 'OpenProgram: run 0123456789abcdef is completed and cannot be paused', actions: [] });
  assert.equal(calls.refreshRuns, 3);
});

test('Resume… of a run of a queue also offers its workers; the pick sends the queue', async () => {
  const { palette, window, client } = setup();
  const workers = [`Resume on the workers of queue "reports"`, `Resume on the workers of queue "reports", re-running the uncertain step`];
  window.picks.push(workers[1]);
  await palette.resumeFromView({ kind: 'run', run: { id: RUN_ID, queue: 'reports' } });
  assert.deepEqual(window.picksShown, [{ title: `Resume ${RUN_ID}`, labels: [...MODES, ...workers] }]);
  assert.deepEqual(client.executed(), [['openprogram.resume', RUN_ID, { rerunUncertain: true, queue: 'reports' }]]);

  window.picks.push(MODES[0]);
  await palette.resumeFromView({ kind: 'run', run: { id: RUN_ID, queue: null } });
  assert.deepEqual(window.picksShown[1], { title: `Resume ${RUN_ID}`, labels: MODES }, 'a run of no queue: only here');
});

test('Run saves the file first (Run executes the file on disk); other commands save nothing', async () => {
  const { palette, window, client, saved } = setup();
  client.answers['openprogram/entrySignature'] = SIGNATURE;
  const order: string[] = [];
  const next = async (command: string): Promise<unknown> => {
    order.push(`${command} after ${saved.length} save(s)`);
    return { run_id: RUN_ID, status: 'completed' };
  };
  window.inputs.push(['{"n": 1}']);
  await palette.viaMiddleware('openprogram.run', [FILE_URI, 'pipeline'], next);
  assert.deepEqual(saved, [FILE_URI]);
  assert.deepEqual(order, ['openprogram.run after 1 save(s)']);
  await palette.viaMiddleware('openprogram.resume', [RUN_ID, { policy: 'keep_original' }], next);
  assert.deepEqual(saved, [FILE_URI]);
});
