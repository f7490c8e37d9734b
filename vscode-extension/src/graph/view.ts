/**
 * Browser side of the run graph (bundled with cytoscape + dagre into dist/graph.js, and
 * copied into the engine for `openprogram show --format html`). The payload comes from a
 * `<script id="openprogram-graph-data" type="application/json">` tag (HTML file) or from a
 * `{type: 'graph', payload}` message (VS Code webview). Clicking a node shows its input and
 * output; in VS Code it also asks the extension for the full node.
 */
import cytoscape from 'cytoscape';
import dagre from 'cytoscape-dagre';

import { DAGRE_LIMIT, nodeDetail, roots, summaryLine, toElements, type GraphNode, type GraphPayload } from './model';

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

cytoscape.use(dagre);

const vscodeApi: VsCodeApi | undefined = typeof acquireVsCodeApi === 'function' ? acquireVsCodeApi() : undefined;

const CSS = `
html, body { margin: 0; height: 100%; font: 13px var(--vscode-font-family, system-ui, sans-serif);
  color: var(--vscode-foreground, #222); background: var(--vscode-editor-background, #fff); }
#openprogram-graph { display: grid; grid-template-rows: auto 1fr; grid-template-columns: 1fr 340px; height: 100vh; }
#op-summary { grid-column: 1 / 3; padding: 6px 10px; border-bottom: 1px solid var(--vscode-panel-border, #ccc); }
#op-canvas { min-height: 0; }
#op-detail { overflow: auto; padding: 8px 10px; border-left: 1px solid var(--vscode-panel-border, #ccc); }
#op-detail h3 { margin: 10px 0 4px; font-size: 12px; text-transform: uppercase; opacity: .7; }
#op-detail pre { white-space: pre-wrap; word-break: break-word; margin: 0;
  font: 12px var(--vscode-editor-font-family, ui-monospace, monospace); }
`;

const STYLE: cytoscape.StylesheetJson = [
  {
    selector: 'node',
    style: {
      shape: 'round-rectangle',
      label: 'data(label)',
      'text-wrap': 'wrap',
      'text-valign': 'center',
      'font-size': 11,
      width: 'data(w)',
      height: 'data(h)',
      'background-color': '#eef3ff',
      'border-width': 1,
      'border-color': '#4a6fd0',
    },
  },
  { selector: 'node.llm', style: { 'background-color': '#fff4e0', 'border-color': '#d08a2a' } },
  { selector: 'node.user', style: { 'background-color': '#eaf7ea', 'border-color': '#3a9a3a' } },
  { selector: 'node.step', style: { 'border-width': 2 } },
  { selector: 'node.error, node.failed', style: { 'border-color': '#c33', 'background-color': '#fde8e8' } },
  { selector: 'node.paused, node.running', style: { 'border-style': 'dashed' } },
  { selector: 'node:selected', style: { 'border-width': 3, 'border-color': '#0a64d8' } },
  { selector: 'edge', style: { width: 1.2, 'curve-style': 'bezier', 'target-arrow-shape': 'triangle', 'line-color': '#889', 'target-arrow-color': '#889' } },
  { selector: 'edge.conversation', style: { 'line-style': 'dashed', 'line-color': '#bbb', 'target-arrow-color': '#bbb' } },
];

function el(tag: string, text = '', id = ''): HTMLElement {
  const node = document.createElement(tag);
  node.textContent = text;
  if (id !== '') {
    node.id = id;
  }
  return node;
}

function showDetail(panel: HTMLElement, node: GraphNode): void {
  panel.replaceChildren();
  for (const section of nodeDetail(node)) {
    panel.append(el('h3', section.title), el('pre', section.body === '' ? '—' : section.body));
  }
}

function draw(payload: GraphPayload): void {
  const root = document.getElementById('openprogram-graph') ?? document.body.appendChild(el('div', '', 'openprogram-graph'));
  root.replaceChildren();
  const summary = el('div', summaryLine(payload), 'op-summary');
  const canvas = el('div', '', 'op-canvas');
  const detail = el('div', 'Click a node to see its input and output.', 'op-detail');
  root.append(summary, canvas, detail);
  const byId = new Map(payload.nodes.map((node) => [node.id, node]));
  const layout =
    payload.nodes.length <= DAGRE_LIMIT
      ? ({ name: 'dagre', rankDir: 'TB', nodeSep: 20, rankSep: 40 } as cytoscape.LayoutOptions)
      : ({ name: 'breadthfirst', directed: true, roots: roots(payload), spacingFactor: 0.8 } as cytoscape.LayoutOptions);
  const elements = toElements(payload);
  const cy = cytoscape({
    container: canvas,
    // Laid out by calls only; conversation edges (added after) would stretch the tree into a chain.
    elements: elements.filter((e) => e.classes !== 'conversation') as cytoscape.ElementDefinition[],
    style: STYLE,
    layout,
    minZoom: 0.05,
    maxZoom: 1.6,
  });
  cy.add(elements.filter((e) => e.classes === 'conversation') as cytoscape.ElementDefinition[]);
  cy.on('tap', 'node', (event) => {
    const node = byId.get(String(event.target.id()));
    if (node !== undefined) {
      showDetail(detail, node);
      vscodeApi?.postMessage({ type: 'select', id: node.id });
    }
  });
  (window as unknown as { openprogramGraph: unknown }).openprogramGraph = { cy, payload };
  document.body.dataset.graphNodes = String(payload.nodes.length);
}

function start(): void {
  const style = document.createElement('style');
  style.textContent = CSS;
  document.head.append(style);
  const tag = document.getElementById('openprogram-graph-data');
  if (tag?.textContent) {
    draw(JSON.parse(tag.textContent) as GraphPayload);
  }
  window.addEventListener('message', (event: MessageEvent) => {
    const message = event.data as { type?: string; payload?: GraphPayload; node?: GraphNode };
    if (message.type === 'graph' && message.payload !== undefined) {
      draw(message.payload);
    } else if (message.type === 'node' && message.node !== undefined) {
      const panel = document.getElementById('op-detail');
      if (panel !== null) {
        showDetail(panel, message.node);
      }
    }
  });
  vscodeApi?.postMessage({ type: 'ready' });
}

start();
