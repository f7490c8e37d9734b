/**
 * The Runs view's items (pure: no `vscode` import): workspace folders → runs → steps, from
 * the server's `openprogram/runs` and `openprogram/runSteps` answers.
 */

export interface RunSummary {
  id: string;
  entry: string;
  function: string;
  programPath: string | null;
  status: string;
  resumable: boolean;
  /** Paused until a tool call is approved or denied (Approve / Deny, not Resume). */
  awaitingApproval?: boolean;
  /** A running run whose cancel waits for the process executing it (its next step). */
  cancelRequested?: boolean;
  /** A running run whose pause waits for the process executing it (its next step). */
  pauseRequested?: boolean;
  /** The queue it was submitted or handed to (workers execute it), or null. */
  queue?: string | null;
  pausedStep: string | null;
  pausedOccurrence: number | null;
  pauseReason: string | null;
  error: string | null;
  result: string;
  createdAt: number;
  updatedAt: number;
}

export interface FolderRuns {
  name: string;
  uri: string;
  store: string;
  runs: RunSummary[];
  /** Why the folder's store cannot be read (it names the store, never a password). */
  error?: string;
  /** How many older finished runs the server left out (it lists the newest). */
  olderRuns?: number;
}

export interface StepSummary {
  key: string;
  scope: string;
  kind: string;
  name: string;
  occurrence: number;
  label: string;
  state: string;
  durationMs: number | null;
  result: string;
  error: string;
}

/** A node of the Runs view: a workspace folder, one of its runs, or a step of a run. */
export type RunsNode =
  | { kind: 'folder'; folder: FolderRuns }
  | { kind: 'run'; run: RunSummary }
  | { kind: 'older'; folder: FolderRuns }
  | { kind: 'step'; run: RunSummary; step: StepSummary; all: StepSummary[] };

/** The run a command was invoked on (a tree node, or nothing from the palette). */
export function runOf(node: unknown): RunSummary | undefined {
  const candidate = node as RunsNode | undefined;
  if (candidate !== undefined && (candidate.kind === 'run' || candidate.kind === 'step')) {
    return candidate.run;
  }
  return undefined;
}

export interface ItemView {
  label: string;
  description: string;
  tooltip: string;
  /** A codicon id (`pass`, `error`, `debug-pause`, ...). */
  icon: string;
  /** A theme color id for the icon, or '' for the default. */
  color: string;
  /** `contextValue`: which actions the item offers (`run resumable running`). */
  context: string;
  collapsible: boolean;
}

const RUN_ICONS: Record<string, [string, string]> = {
  completed: ['pass', 'testing.iconPassed'],
  failed: ['error', 'testing.iconFailed'],
  running: ['sync~spin', ''],
  paused: ['debug-pause', 'charts.yellow'],
  interrupted: ['warning', 'charts.yellow'],
  cancelled: ['circle-slash', ''],
};

const STEP_ICONS: Record<string, [string, string]> = {
  completed: ['pass', 'testing.iconPassed'],
  failed: ['error', 'testing.iconFailed'],
  running: ['sync~spin', ''],
  paused: ['debug-pause', 'charts.yellow'],
  uncertain: ['question', 'charts.orange'],
};

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) {
    return '';
  }
  if (ms >= 60_000) {
    return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  }
  if (ms >= 1000) {
    return `${(ms / 1000).toFixed(1)} s`;
  }
  return ms >= 10 ? `${Math.round(ms)} ms` : `${ms.toFixed(1)} ms`;
}

/** `2026-11-30 17:56` in local time. */
export function formatTime(epochSeconds: number): string {
  const d = new Date(epochSeconds * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function folderItem(folder: FolderRuns): ItemView {
  if (folder.error !== undefined && folder.error !== '') {
    return {
      label: folder.name,
      description: `cannot read the run store: ${folder.error}`,
      tooltip: `${folder.error}\n(store ${folder.store})`,
      icon: 'warning',
      color: 'problemsWarningIcon.foreground',
      context: 'folder error',
      collapsible: folder.runs.length > 0,
    };
  }
  return {
    label: folder.name,
    description: `${folder.runs.length} run${folder.runs.length === 1 ? '' : 's'}${(folder.olderRuns ?? 0) > 0 ? ` (+${folder.olderRuns} older)` : ''}`,
    tooltip: `Runs in ${folder.store}`,
    icon: 'root-folder',
    color: '',
    context: 'folder',
    collapsible: true,
  };
}

/** A folder's runs, then an item saying how many older finished runs are not shown. */
export function folderChildren(folder: FolderRuns): RunsNode[] {
  const nodes: RunsNode[] = folder.runs.map((run) => ({ kind: 'run', run }));
  return (folder.olderRuns ?? 0) > 0 ? [...nodes, { kind: 'older', folder }] : nodes;
}

export function olderItem(folder: FolderRuns): ItemView {
  const n = folder.olderRuns ?? 0;
  return {
    label: `${n} older run${n === 1 ? '' : 's'} not shown`,
    description: 'finished',
    tooltip: `${n} older finished run${n === 1 ? '' : 's'} of ${folder.store} not shown; \`openprogram runs\` lists every run`,
    icon: 'history',
    color: '',
    context: 'older',
    collapsible: false,
  };
}

export function runItem(run: RunSummary): ItemView {
  const [icon, color] = RUN_ICONS[run.status] ?? ['circle-outline', ''];
  let detail = '';
  if (run.status === 'paused' && run.pausedStep !== null) {
    detail = `paused at "${run.pausedStep}" #${run.pausedOccurrence ?? 0}${run.pauseReason !== null ? ` (${run.pauseReason})` : ''}`;
  } else if (run.status === 'completed') {
    detail = run.result !== '' ? `→ ${run.result}` : 'completed';
  } else if (run.status === 'failed') {
    detail = run.error ?? 'failed';
  } else if (cancelRequested(run)) {
    detail = 'running, cancel requested';
  } else if (pauseRequested(run)) {
    detail = 'running, pause requested';
  } else {
    detail = run.status;
  }
  const pausable = (run.status === 'running' && !pauseRequested(run)) || run.status === 'interrupted';
  const context = [
    'run',
    run.resumable && run.awaitingApproval !== true ? 'resumable' : '',
    run.awaitingApproval === true ? 'approvable' : '',
    run.status === 'running' || run.status === 'paused' || run.status === 'interrupted' ? 'cancellable' : '',
    pausable ? 'pausable' : '',
  ]
    .filter((part) => part !== '')
    .join(' ');
  return {
    label: `${run.entry} · ${run.id.slice(0, 8)}`,
    description: `${detail} · ${formatTime(run.createdAt)}`,
    tooltip: [
      `run ${run.id}`,
      `${run.function} — ${run.status}`,
      cancelRequested(run) ? 'cancel requested: the process executing it stops at its next step' : '',
      pauseRequested(run) ? 'pause requested: the process executing it pauses it before its next step' : '',
      run.error ?? '',
      run.programPath ?? '',
    ]
      .filter((l) => l !== '')
      .join('\n'),
    icon,
    color,
    context,
    collapsible: true,
  };
}

/** Whether `run` is running with its cancel requested (the server's `cancelRequested`). */
export function cancelRequested(run: RunSummary): boolean {
  return run.status === 'running' && run.cancelRequested === true;
}

/** Whether `run` is running with its pause requested (the server's `pauseRequested`). */
export function pauseRequested(run: RunSummary): boolean {
  return run.status === 'running' && run.pauseRequested === true;
}

export function stepItem(step: StepSummary): ItemView {
  const [icon, color] = STEP_ICONS[step.state] ?? ['circle-outline', ''];
  const duration = formatDuration(step.durationMs);
  const tail =
    step.state === 'completed'
      ? step.result !== '' ? `→ ${step.result}` : ''
      : step.state === 'failed'
        ? step.error
        : step.state === 'uncertain'
          ? 'uncertain: started, result not saved'
          : step.state;
  return {
    label: step.label,
    description: [duration, tail].filter((part) => part !== '').join(' '),
    tooltip: `${step.kind} "${step.name}" #${step.occurrence} (${step.key}) — ${step.state}`,
    icon,
    color,
    context: `step ${step.state}`,
    collapsible: false,
  };
}

/** Steps nested by scope: the top level first, each workflow/parallel holding its children. */
export function stepChildren(steps: readonly StepSummary[], scope: string): StepSummary[] {
  return steps.filter((step) => step.scope === scope);
}

export function hasChildren(steps: readonly StepSummary[], step: StepSummary): boolean {
  return steps.some((other) => other.scope === step.key);
}

/** Whether any run is still executing (the view then refreshes as the store changes). */
export function anyLive(folders: readonly FolderRuns[]): boolean {
  return folders.some((folder) => folder.runs.some((run) => run.status === 'running'));
}

export function asFolders(value: unknown): FolderRuns[] {
  const folders = (value as { folders?: unknown } | null)?.folders;
  return Array.isArray(folders) ? (folders as FolderRuns[]) : [];
}
