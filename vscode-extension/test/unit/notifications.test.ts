import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { shouldNotify } from '../../src/notifications';

test('showNotifications decides which server messages pop up', () => {
  const result = 'Run pipeline: completed (run 99faadcb091947cd) → 20';
  assert.equal(shouldNotify('off', 1, 'boom'), false);
  assert.equal(shouldNotify('onError', 1, 'boom'), true);
  assert.equal(shouldNotify('onError', 2, 'careful'), false);
  assert.equal(shouldNotify('onError', 3, result), true); // what the user asked for
  assert.equal(shouldNotify('onWarning', 2, 'careful'), true);
  assert.equal(shouldNotify('onWarning', 3, 'reloaded [tool.openprogram.lint]'), false);
  assert.equal(shouldNotify('always', 3, 'reloaded [tool.openprogram.lint]'), true);
  assert.equal(shouldNotify('always', 4, 'log line'), false);
});
