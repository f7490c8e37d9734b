import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { RestartPolicy } from '../../src/restartPolicy';

test('delays double per crash up to the cap, then the policy gives up', () => {
  const policy = new RestartPolicy({ maxRestarts: 4, baseDelayMs: 100, maxDelayMs: 500, windowMs: 60_000 });
  const delays: number[] = [];
  for (let i = 0; i < 4; i++) {
    const decision = policy.onCrash(1_000 + i);
    assert.equal(decision.action, 'restart');
    if (decision.action === 'restart') {
      assert.equal(decision.attempt, i + 1);
      delays.push(decision.delayMs);
    }
  }
  assert.deepEqual(delays, [100, 200, 400, 500]);
  const last = policy.onCrash(1_010);
  assert.equal(last.action, 'give-up');
  assert.match(last.message, /crashed 5 times/);
  assert.match(last.message, /Restart Server/);
  // Still giving up on further crashes in the window: no restart loop.
  assert.equal(policy.onCrash(1_020).action, 'give-up');
});

test('crashes older than the window are forgotten', () => {
  const policy = new RestartPolicy({ maxRestarts: 2, baseDelayMs: 10, maxDelayMs: 1_000, windowMs: 1_000 });
  assert.equal(policy.onCrash(0).action, 'restart');
  assert.equal(policy.onCrash(10).action, 'restart');
  const later = policy.onCrash(5_000);
  assert.equal(later.action, 'restart');
  if (later.action === 'restart') {
    assert.equal(later.attempt, 1);
    assert.equal(later.delayMs, 10);
  }
  assert.equal(policy.recentCrashes, 1);
});

test('a manual restart resets the count', () => {
  const policy = new RestartPolicy({ maxRestarts: 1, baseDelayMs: 10, maxDelayMs: 10, windowMs: 60_000 });
  assert.equal(policy.onCrash(0).action, 'restart');
  assert.equal(policy.onCrash(1).action, 'give-up');
  policy.reset();
  assert.equal(policy.recentCrashes, 0);
  assert.equal(policy.onCrash(2).action, 'restart');
});

test('zero restarts allowed gives up on the first crash; bad options are rejected', () => {
  assert.equal(new RestartPolicy({ maxRestarts: 0 }).onCrash(0).action, 'give-up');
  assert.throws(() => new RestartPolicy({ maxRestarts: -1 }), RangeError);
  assert.throws(() => new RestartPolicy({ baseDelayMs: 100, maxDelayMs: 10 }), RangeError);
});
