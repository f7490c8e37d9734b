import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { anyLive, asFolders, folderChildren, folderItem, olderItem, formatDuration, hasChildren, runItem, stepChildren, stepItem, type RunSummary, type StepSummary } from '../../src/runsTree';

const RUN: RunSummary = {
  id: '99faadcb091947cd',
  entry: 'pipeline',
  function: 'pipeline',
  programPath: '/w/pauser.py',
  status: 'paused',
  resumable: true,
  pausedStep: 'finish',
  pausedOccurrence: 0,
  pauseReason: 'requested',
  error: null,
  result: '',
  createdAt: 0,
  updatedAt: 0,
};

function step(over: Partial<StepSummary>): StepSummary {
  return { key: 'a#0', scope: '', kind: 'step', name: 'a', occurrence: 0, label: 'a #0', state: 'completed', durationMs: 12.4, result: '{"i": 3}', error: '', ...over };
}

test('a paused run offers resume and cancel and says where it stopped', () => {
  const view = runItem(RUN);
  assert.equal(view.label, 'pipeline · 99faadcb');
  assert.match(view.description, /^paused at "finish" #0 \(requested\) · /);
  assert.equal(view.icon, 'debug-pause');
  assert.equal(view.context, 'run resumable cancellable');
});

test('a run awaiting approval offers Approve and Deny, not Resume (which refuses it)', () => {
  const awaiting = runItem({ ...RUN, pausedStep: 'delete_file', pauseReason: 'awaiting_approval', resumable: false, awaitingApproval: true });
  assert.equal(awaiting.context, 'run approvable cancellable');
  assert.match(awaiting.description, /^paused at "delete_file" #0 \(awaiting_approval\)/);
  // an older server without `awaitingApproval`: the plain resumable run as before
  assert.equal(runItem(RUN).context, 'run resumable cancellable');
});

test('a folder whose store cannot be read says why instead of showing no runs', () => {
  const folder = { name: 'ws', uri: 'file:///ws', store: '/ws/.openprogram', runs: [] };
  assert.equal(folderItem(folder).description, '0 runs');
  const broken = folderItem({ ...folder, error: '/ws/.openprogram/openprogram.db is not a readable OpenProgram store' });
  assert.equal(broken.icon, 'warning');
  assert.match(broken.description, /^cannot read the run store: \/ws\/\.openprogram\/openprogram\.db is not a readable/);
  assert.equal(broken.context, 'folder error');
});

test('a folder whose older finished runs were left out ends in an item saying how many', () => {
  const folder = { name: 'ws', uri: 'file:///ws', store: '/ws/.openprogram', runs: [RUN] };
  assert.deepEqual(folderChildren(folder), [{ kind: 'run', run: RUN }]);
  const capped = { ...folder, olderRuns: 1800 };
  const nodes = folderChildren(capped);
  assert.equal(nodes.length, 2);
  assert.deepEqual(nodes[1], { kind: 'older', folder: capped });
  assert.equal(olderItem(capped).label, '1800 older runs not shown');
  assert.equal(folderItem(capped).description, '1 run (+1800 older)');
});

test('a running run whose cancel was requested says so until its process stops', () => {
  const running = { ...RUN, status: 'running', resumable: false, pausedStep: null, pausedOccurrence: null, pauseReason: null };
  const plain = runItem({ ...running, cancelRequested: false });
  assert.match(plain.description, /^running · /);
  assert.doesNotMatch(plain.tooltip, /cancel requested/);
  const requested = runItem({ ...running, cancelRequested: true });
  assert.match(requested.description, /^running, cancel requested · /);
  assert.match(requested.tooltip, /\ncancel requested: the process executing it stops at its next step\n/);
  assert.equal(requested.icon, 'sync~spin');
  assert.equal(requested.context, 'run cancellable pausable');
  assert.equal(plain.context, 'run cancellable pausable');
  const gone = runItem({ ...RUN, status: 'cancelled', resumable: false, cancelRequested: true });
  assert.match(gone.description, /^cancelled · /);
});

test('a running run whose pause was requested says so and is not offered Pause again', () => {
  const running = { ...RUN, status: 'running', resumable: false, pausedStep: null, pausedOccurrence: null, pauseReason: null };
  const requested = runItem({ ...running, pauseRequested: true });
  assert.match(requested.description, /^running, pause requested · /);
  assert.match(requested.tooltip, /\npause requested: the process executing it pauses it before its next step\n/);
  assert.equal(requested.context, 'run cancellable');
  const interrupted = runItem({ ...running, status: 'interrupted', resumable: true });
  assert.equal(interrupted.context, 'run resumable cancellable pausable', 'an interrupted run is paused or cancelled at once');
  const paused = runItem({ ...RUN, pauseRequested: true });
  assert.doesNotMatch(paused.description, /pause requested/);
  assert.doesNotMatch(paused.context, /pausable/);
});

test('completed and failed runs show their result or error and offer no resume', () => {
  const done = runItem({ ...RUN, status: 'completed', resumable: false, result: '20' });
  assert.match(done.description, /^→ 20 · /);
  assert.equal(done.context, 'run');
  const failed = runItem({ ...RUN, status: 'failed', resumable: false, error: 'ValueError: too big' });
  assert.match(failed.description, /^ValueError: too big/);
  assert.equal(failed.icon, 'error');
});

test('steps show name #occurrence, a status icon, the duration and a short result or error', () => {
  assert.deepEqual(
    [stepItem(step({})).label, stepItem(step({})).description, stepItem(step({})).icon],
    ['a #0', '12 ms → {"i": 3}', 'pass'],
  );
  const failed = stepItem(step({ state: 'failed', error: 'ValueError: bad', result: '' }));
  assert.equal(failed.description, '12 ms ValueError: bad');
  assert.equal(failed.icon, 'error');
  assert.equal(stepItem(step({ state: 'uncertain', durationMs: null })).icon, 'question');
  assert.equal(stepItem(step({ state: 'running', durationMs: 1500 })).description, '1.5 s running');
});

test('workflow and parallel steps hold their nested steps', () => {
  const all = [
    step({ key: 'review#0', kind: 'workflow', name: 'review', label: 'review #0' }),
    step({ key: 'review#0/summarize#0', scope: 'review#0', name: 'summarize', label: 'summarize #0' }),
    step({ key: 'publish#0', name: 'publish', label: 'publish #0' }),
  ];
  assert.deepEqual(stepChildren(all, '').map((s) => s.label), ['review #0', 'publish #0']);
  assert.deepEqual(stepChildren(all, 'review#0').map((s) => s.label), ['summarize #0']);
  assert.equal(hasChildren(all, all[0]!), true);
  assert.equal(hasChildren(all, all[2]!), false);
});

test('durations and the server answer', () => {
  assert.deepEqual([formatDuration(0.04), formatDuration(12.4), formatDuration(1234), formatDuration(125_000), formatDuration(null)], [
    '0.0 ms',
    '12 ms',
    '1.2 s',
    '2 min 5 s',
    '',
  ]);
  assert.deepEqual(asFolders(undefined), []);
  const folders = asFolders({ folders: [{ name: 'ws', uri: 'file:///ws', store: '/ws/.openprogram', runs: [RUN] }] });
  assert.equal(anyLive(folders), false);
  assert.equal(anyLive([{ ...folders[0]!, runs: [{ ...RUN, status: 'running' }] }]), true);
});
