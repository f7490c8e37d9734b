import { test } from 'node:test';
import * as assert from 'node:assert/strict';

import { DAGRE_LIMIT, labelBox, nodeDetail, nodeLabel, roots, summaryLine, toElements, type GraphNode, type GraphPayload } from '../../src/graph/model';

function node(over: Partial<GraphNode>): GraphNode {
  return { id: 'x', seq: 1, kind: 'code', name: 'x', status: 'completed', caller: null, pred: null, durationMs: null, model: null, usage: null, step: null, error: null, input: '', output: '', ...over };
}

const PAYLOAD: GraphPayload = {
  title: 'run r1',
  session: 'r1',
  run: { id: 'r1', status: 'completed' },
  totals: { nodes: 3, llmCalls: 1, input_tokens: 12, output_tokens: 5 },
  nodes: [
    node({ id: 'root', name: 'triage', durationMs: 1234 }),
    node({ id: 'llm1', seq: 2, kind: 'llm', name: 'llm', caller: 'root', pred: 'root', model: 'openai:gpt-4.1-mini', usage: { input_tokens: 12, output_tokens: 5 }, durationMs: 40 }),
    node({ id: 's1', seq: 3, name: 'collect', caller: 'root', pred: 'llm1', step: 'collect #0', status: 'error', error: 'ValueError' }),
  ],
};

test('nodes are labelled with status, step or model and tokens, and duration', () => {
  assert.equal(nodeLabel(PAYLOAD.nodes[0]!), '✓ triage\n1.23 s');
  assert.equal(nodeLabel(PAYLOAD.nodes[1]!), '✓ llm\nopenai:gpt-4.1-mini · 12→5 tok\n40 ms');
  assert.equal(nodeLabel(PAYLOAD.nodes[2]!), '✗ collect #0');
  assert.equal(nodeLabel(node({ name: 'glossary', step: 'glossary #0' })), '✓ glossary #0');
  assert.equal(nodeLabel(node({ name: 'collect', step: 'glossary #0' })), '✓ glossary #0\ncollect');
  const box = labelBox('✓ llm\nopenai:gpt-4.1-mini · 12→5 tok');
  assert.ok(box.w > 150 && box.h === 40);
});

test('calls nest by caller; conversation edges only where they differ from calls', () => {
  const elements = toElements(PAYLOAD);
  const edges = elements.filter((e) => e.group === 'edges').map((e) => `${e.classes}:${e.data.source}->${e.data.target}`);
  assert.deepEqual(edges, ['call:root->llm1', 'call:root->s1', 'conversation:llm1->s1']);
  const classes = elements.filter((e) => e.group === 'nodes').map((e) => e.classes);
  assert.deepEqual(classes, ['code completed', 'llm completed', 'code error step']);
  assert.deepEqual(roots(PAYLOAD), ['root']);
  assert.ok(DAGRE_LIMIT >= 1000);
});

test('a clicked node shows its facts, input and output', () => {
  const [facts, input, output] = nodeDetail({ ...PAYLOAD.nodes[1]!, input: '{"model": "gpt"}', output: '{"text": "hi"}' });
  assert.equal(facts?.body, 'llm llm — completed\nmodel openai:gpt-4.1-mini\ntokens 12→5 tok\nduration 40 ms');
  assert.deepEqual([input?.title, input?.body, output?.body], ['input', '{"model": "gpt"}', '{"text": "hi"}']);
  assert.equal(summaryLine(PAYLOAD), 'run r1 · completed · 3 nodes · 1 model calls · 12→5 tokens');
});
