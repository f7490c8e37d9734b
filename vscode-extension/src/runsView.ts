/**
 * The Runs view (Explorer): workspace folders → runs → steps, read from the language
 * server (`openprogram/runs`, `openprogram/runSteps`) and refreshed when the server says
 * runs changed (`openprogram/runsChanged`). Presentation decisions live in `runsTree.ts`.
 */
import * as vscode from 'vscode';

import {
  asFolders,
  folderChildren,
  folderItem,
  hasChildren,
  olderItem,
  runItem,
  stepChildren,
  stepItem,
  type ItemView,
  type RunsNode,
  type StepSummary,
} from './runsTree';

export const RUNS_VIEW_ID = 'openprogram.runs';

/** Sends a custom request to the running server (undefined when it is not running). */
export type ServerRequest = (method: string, params: object) => Promise<unknown>;

function toTreeItem(view: ItemView, id: string): vscode.TreeItem {
  const item = new vscode.TreeItem(
    view.label,
    view.collapsible ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
  );
  item.id = id;
  item.description = view.description;
  item.tooltip = view.tooltip;
  item.contextValue = view.context;
  item.iconPath = new vscode.ThemeIcon(view.icon, view.color !== '' ? new vscode.ThemeColor(view.color) : undefined);
  return item;
}

export class RunsProvider implements vscode.TreeDataProvider<RunsNode> {
  private readonly changed = new vscode.EventEmitter<RunsNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private steps = new Map<string, StepSummary[]>();

  constructor(private readonly request: ServerRequest) {}

  refresh(): void {
    this.steps.clear();
    this.changed.fire(undefined);
  }

  getTreeItem(node: RunsNode): vscode.TreeItem {
    switch (node.kind) {
      case 'folder':
        return toTreeItem(folderItem(node.folder), `folder:${node.folder.uri}`);
      case 'run': {
        const item = toTreeItem(runItem(node.run), `run:${node.run.id}`);
        if (node.run.status === 'running' || node.run.status === 'paused') {
          item.collapsibleState = vscode.TreeItemCollapsibleState.Expanded;
        }
        return item;
      }
      case 'older':
        return toTreeItem(olderItem(node.folder), `older:${node.folder.uri}`);
      case 'step': {
        const view = stepItem(node.step);
        const item = toTreeItem({ ...view, collapsible: hasChildren(node.all, node.step) }, `step:${node.run.id}:${node.step.key}`);
        return item;
      }
    }
  }

  async getChildren(node?: RunsNode): Promise<RunsNode[]> {
    if (node === undefined) {
      const folders = asFolders(await this.request('openprogram/runs', {}));
      // one folder: its runs at the top, unless its store cannot be read (then the
      // folder's item says why)
      if (folders.length === 1 && folders[0] !== undefined && folders[0].error === undefined) {
        return folderChildren(folders[0]);
      }
      return folders.map((folder) => ({ kind: 'folder', folder }));
    }
    if (node.kind === 'folder') {
      return folderChildren(node.folder);
    }
    if (node.kind === 'run') {
      const answer = (await this.request('openprogram/runSteps', { runId: node.run.id })) as { steps?: StepSummary[] } | undefined;
      const all = answer?.steps ?? [];
      this.steps.set(node.run.id, all);
      return stepChildren(all, '').map((step) => ({ kind: 'step', run: node.run, step, all }));
    }
    if (node.kind === 'older') {
      return [];
    }
    return stepChildren(node.all, node.step.key).map((step) => ({ kind: 'step', run: node.run, step, all: node.all }));
  }

  dispose(): void {
    this.changed.dispose();
  }
}
