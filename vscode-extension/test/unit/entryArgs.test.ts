import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { asProblems, asSignature, initialArgsText, rememberKey, signatureHint, validateWith, within, type EntrySignature } from '../../src/entryArgs';

// What the server answers for `def build_report(topic: str, sections: int = 3, tags: list[str] | None = None)`.
const SIG: EntrySignature = {
  entry: 'build_report',
  params: [
    { name: 'topic', annotation: 'str', required: true, default: null },
    { name: 'sections', annotation: 'int', required: false, default: 3 },
    { name: 'tags', annotation: 'list[str] | None', required: false, default: null },
    { name: 'ratio', annotation: 'float', required: false, default: 0.5 },
    { name: 'anything', annotation: null, required: false, default: null },
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

test('the prompt checks the JSON shape itself and shows the server\'s lines for the arguments', async () => {
  const asked: string[] = [];
  const check = validateWith(async (text) => {
    asked.push(text);
    return text.includes('"3"') ? ['argument \'sections\' expects int, got string "3"', "unknown argument 'sectons' (did you mean 'sections'?)"] : [];
  });
  assert.match((await check('{"topic": ')) ?? '', /^Arguments are not valid JSON/);
  assert.match((await check('[1]')) ?? '', /^Arguments must be a JSON object/);
  assert.deepEqual(asked, [], 'text that is not a JSON object is not sent');
  assert.equal(
    await check('{"topic": "t", "sections": "3", "sectons": 1}'),
    'argument \'sections\' expects int, got string "3"; unknown argument \'sectons\' (did you mean \'sections\'?)',
  );
  assert.equal(await check('{"topic": "t"}'), undefined);
  assert.deepEqual(asked, ['{"topic": "t", "sections": "3", "sectons": 1}', '{"topic": "t"}'], 'the text as typed');
  // No answer from the server (not running, failed, too slow): accepted, the Run check refuses later.
  assert.equal(await validateWith(async () => undefined)('{"sections": "3"}'), undefined);
});

test('a server answer is read as problems only when it is a list of lines', () => {
  assert.deepEqual(asProblems({ problems: ["missing required argument 'topic' (str)"] }), ["missing required argument 'topic' (str)"]);
  assert.deepEqual(asProblems({ problems: [] }), []);
  assert.equal(asProblems(undefined), undefined);
  assert.equal(asProblems({ problems: [1] }), undefined);
  assert.equal(asProblems({ error: 'x' }), undefined);
});

test('a bounded wait gives the answer, or the late value when there is none', async () => {
  assert.equal(await within(Promise.resolve('answer'), 60_000, 'late'), 'answer');
  assert.equal(await within(new Promise<string>(() => undefined), 1, 'late'), 'late');
});

test('only a well-formed server answer is used as a signature', () => {
  assert.equal(asSignature(null), null);
  assert.equal(asSignature({ entry: 'x' }), null);
  assert.deepEqual(asSignature(SIG), SIG);
});
