/**
 * The run graph as cytoscape elements: pure functions of the payload the language server
 * (`openprogram/runGraph`) and `openprogram show --format html` produce, so the webview and
 * the HTML file draw the same picture. No DOM, no vscode: unit-tested under node.
 */

export interface GraphNode {
  id: string;
  seq: number;
  kind: string;
  name: string;
  status: string;
  caller: string | null;
  pred: string | null;
  durationMs: number | null;
  model: string | null;
  usage: { input_tokens?: number; output_tokens?: number } | null;
  step: string | null;
  error: string | null;
  input: string;
  output: string;
}

export interface GraphPayload {
  title: string;
  session: string;
  run: { id: string; status: string; entry?: string } | null;
  totals: { nodes: number; llmCalls: number; input_tokens: number; output_tokens: number };
  nodes: GraphNode[];
}

export interface Element {
  group: 'nodes' | 'edges';
  data: Record<string, string | number | null>;
  classes: string;
}

/** Above this many nodes the layout is breadth-first (dagre is too slow for the browser). */
export const DAGRE_LIMIT = 1500;

export const STATUS_ICONS: Record<string, string> = {
  completed: '✓',
  error: '✗',
  failed: '✗',
  running: '…',
  paused: '‖', // U+2016: "⏸" has no glyph in the default Linux fonts (DejaVu)
  cancelled: '⊘',
};

export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) {
    return '';
  }
  if (ms >= 1000) {
    return `${(ms / 1000).toFixed(2)} s`;
  }
  return ms >= 10 ? `${Math.round(ms)} ms` : `${ms.toFixed(1)} ms`;
}

export function formatTokens(usage: GraphNode['usage']): string {
  if (usage === null) {
    return '';
  }
  const input = usage.input_tokens ?? 0;
  const output = usage.output_tokens ?? 0;
  return `${input}→${output} tok`;
}

/** The text drawn in a node: icon, kind-specific name, model/tokens or step, duration. */
export function nodeLabel(node: GraphNode): string {
  const icon = STATUS_ICONS[node.status] ?? '?';
  const lines = [`${icon} ${node.kind === 'llm' ? 'llm' : node.step ?? node.name}`];
  if (node.kind === 'llm') {
    lines.push([node.model ?? '', formatTokens(node.usage)].filter((part) => part !== '').join(' · '));
  } else if (node.step !== null && node.step.replace(/ #\d+$/, '') !== node.name) {
    lines.push(node.name);
  }
  const duration = formatMs(node.durationMs);
  if (duration !== '') {
    lines.push(duration);
  }
  return lines.filter((line) => line !== '').join('\n');
}

/** Width and height (px) that fit a label drawn at 11 px. */
export function labelBox(label: string): { w: number; h: number } {
  const lines = label.split('\n');
  const longest = Math.max(...lines.map((line) => line.length));
  return { w: Math.ceil(longest * 6.6) + 18, h: lines.length * 14 + 12 };
}

/** Nodes, call edges (caller → callee) and conversation edges where they differ from calls. */
export function toElements(payload: GraphPayload): Element[] {
  const ids = new Set(payload.nodes.map((node) => node.id));
  const out: Element[] = [];
  for (const node of payload.nodes) {
    const label = nodeLabel(node);
    out.push({
      group: 'nodes',
      data: { id: node.id, label, kind: node.kind, status: node.status, ...labelBox(label) },
      classes: [node.kind, node.status, node.step !== null ? 'step' : ''].filter((c) => c !== '').join(' '),
    });
  }
  for (const node of payload.nodes) {
    if (node.caller !== null && node.caller !== node.id && ids.has(node.caller)) {
      out.push({ group: 'edges', data: { id: `c:${node.id}`, source: node.caller, target: node.id }, classes: 'call' });
    }
    if (node.pred !== null && node.pred !== node.caller && node.pred !== node.id && ids.has(node.pred)) {
      out.push({ group: 'edges', data: { id: `p:${node.id}`, source: node.pred, target: node.id }, classes: 'conversation' });
    }
  }
  return out;
}

/** Root nodes (no caller inside the graph), for the breadth-first layout. */
export function roots(payload: GraphPayload): string[] {
  const ids = new Set(payload.nodes.map((node) => node.id));
  return payload.nodes.filter((node) => node.caller === null || !ids.has(node.caller)).map((node) => node.id);
}

/** The detail panel of a clicked node, as plain text sections. */
export function nodeDetail(node: GraphNode): Array<{ title: string; body: string }> {
  const facts = [
    `${node.kind} ${node.name} — ${node.status}`,
    node.step !== null ? `step ${node.step}` : '',
    node.model !== null ? `model ${node.model}` : '',
    node.usage !== null ? `tokens ${formatTokens(node.usage)}` : '',
    node.durationMs !== null ? `duration ${formatMs(node.durationMs)}` : '',
    node.error !== null ? `error ${node.error}` : '',
  ].filter((line) => line !== '');
  return [
    { title: `#${node.seq}`, body: facts.join('\n') },
    { title: 'input', body: node.input },
    { title: 'output', body: node.output },
  ];
}

/** One line of totals above the graph. */
export function summaryLine(payload: GraphPayload): string {
  const t = payload.totals;
  const run = payload.run !== null ? ` · ${payload.run.status}` : '';
  return `${payload.title}${run} · ${t.nodes} nodes · ${t.llmCalls} model calls · ${t.input_tokens}→${t.output_tokens} tokens`;
}
