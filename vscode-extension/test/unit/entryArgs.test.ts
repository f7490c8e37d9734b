import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { asSignature, checkEntryArgs, initialArgsText, rememberKey, signatureHint, validateAgainst, type EntrySignature } from '../../src/entryArgs';

// What the server answers for `def build_report(topic: str, sections: int = 3, tags: list[str] | None = None)`.
const SIG: EntrySignature = {
  entry: 'build_report',
  params: [
    { name: 'topic', annotation: 'str', type: 'str', required: true, default: null },
    { name: 'sections', annotation: 'int', type: 'int', required: false, default: 3 },
    { name: 'tags', annotation: 'list[str] | None', type: 'list', required: false, default: null },
    { name: 'ratio', annotation: 'float', type: 'float', required: false, default: 0.5 },
    { name: 'anything', annotation: null, type: null, required: false, default: null },
  ],
  template: { topic: '', sections: 3, tags: null, ratio: 0.5, anything: null },
};

test('the prompt opens with the signature template, or the arguments used last time', () => {
  assert.equal(initialArgsText(SIG, undefined), '{"topic":"","sections":3,"tags":null,"ratio":0.5,"anything":null}');
  assert.equal(initialArgsText(SIG, '{"topic": "tides"}'), '{"topic": "tides"}');
  assert.equal(initialArgsText(SIG, '[not json'), initialArgsText(SIG, undefined));
  assert.equal(initialArgsText(null, undefined), '{}');
  assert.notEqual(rememberKey('file:///a.py', 'main'), rememberKey('file:///b.py', 'main'));
});

test('the prompt says which parameters the entry takes', () => {
  assert.equal(
    signatureHint(SIG),
    'build_report(topic: str, sections: int = 3, tags: list[str] | None = null, ratio: float = 0.5, anything = null)',
  );
  assert.match(signatureHint(null), /JSON object/);
});

test('arguments are checked against the signature before the run', () => {
  assert.deepEqual(checkEntryArgs('{"topic": "tides"}', SIG), { ok: true, value: { topic: 'tides' } });
  assert.deepEqual(checkEntryArgs('{"topic": "t", "sections": 2, "ratio": 1, "tags": null, "anything": [1]}', SIG).ok, true);
  const check = validateAgainst(SIG);
  assert.equal(check('{}'), 'build_report needs "topic" (str)');
  assert.equal(check('{"topic": "t", "section": 2}'), 'build_report has no parameter "section": it takes topic, sections, tags, ratio, anything');
  assert.equal(check('{"topic": "t", "sections": "3"}'), '"sections" must be int, got str "3"');
  assert.equal(check('{"topic": "t", "sections": 2.5}'), '"sections" must be int, got float 2.5');
  assert.equal(check('{"topic": null}'), '"topic" must be str, got null null');
  assert.equal(check('{"topic": "t", "tags": "a"}'), '"tags" must be list[str] | None, got str "a"');
  assert.match(check('{"topic": ') ?? '', /^Arguments are not valid JSON/);
  // Without a signature only the JSON shape is checked.
  assert.equal(validateAgainst(null)('{"x": 1}'), undefined);
});

test('only a well-formed server answer is used as a signature', () => {
  assert.equal(asSignature(null), null);
  assert.equal(asSignature({ entry: 'x' }), null);
  assert.deepEqual(asSignature(SIG), SIG);
});
