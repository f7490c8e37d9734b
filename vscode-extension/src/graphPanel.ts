/**
 * The run graph webview: draws `openprogram/runGraph` with the bundled cytoscape script
 * (dist/graph.js, no CDN; a strict Content-Security-Policy allows only that script). A
 * click on a node asks the server for the whole node (`openprogram/runNode`).
 */
import * as vscode from 'vscode';

import type { ServerRequest } from './runsView';

export class GraphPanels implements vscode.Disposable {
  private readonly panels = new Map<string, vscode.WebviewPanel>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly request: ServerRequest,
  ) {}

  async show(runId: string): Promise<void> {
    const payload = await this.request('openprogram/runGraph', { runId });
    if (payload === null || payload === undefined) {
      void vscode.window.showWarningMessage(`OpenProgram: no graph for run ${runId} (no session recorded).`);
      return;
    }
    let panel = this.panels.get(runId);
    if (panel === undefined) {
      panel = vscode.window.createWebviewPanel('openprogram.runGraph', `Run graph ${runId.slice(0, 8)}`, vscode.ViewColumn.Active, {
        enableScripts: true,
        localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist')],
        retainContextWhenHidden: true,
      });
      const current = panel;
      this.panels.set(runId, current);
      current.onDidDispose(() => this.panels.delete(runId));
      current.webview.onDidReceiveMessage(async (message: { type?: string; id?: string }) => {
        if (message.type === 'ready') {
          void current.webview.postMessage({ type: 'graph', payload: await this.request('openprogram/runGraph', { runId }) });
        } else if (message.type === 'select' && typeof message.id === 'string') {
          const node = await this.request('openprogram/runNode', { runId, nodeId: message.id });
          if (node !== null && node !== undefined) {
            void current.webview.postMessage({ type: 'node', node });
          }
        }
      });
      current.webview.html = this.html(current.webview);
    } else {
      panel.reveal();
      void panel.webview.postMessage({ type: 'graph', payload });
    }
  }

  /** Redraw open graphs (runs changed). */
  async refresh(): Promise<void> {
    for (const [runId, panel] of this.panels) {
      const payload = await this.request('openprogram/runGraph', { runId });
      if (payload !== null && payload !== undefined) {
        void panel.webview.postMessage({ type: 'graph', payload });
      }
    }
  }

  private html(webview: vscode.Webview): string {
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'graph.js'));
    const csp = `default-src 'none'; img-src ${webview.cspSource} data:; style-src ${webview.cspSource} 'unsafe-inline'; script-src ${webview.cspSource};`;
    return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><div id="openprogram-graph"></div><script src="${script.toString()}"></script></body></html>`;
  }

  dispose(): void {
    for (const panel of this.panels.values()) {
      panel.dispose();
    }
    this.panels.clear();
  }
}
