/**
 * Fakes of the VS Code API (`vscode.window`, `vscode.workspace`, a `vscode-languageclient`
 * client) for the unit tests of clients.ts and palette.ts: they record what the extension
 * asked for and answer the way a user (or a server) would, from a script.
 */
import * as assert from 'node:assert/strict';

import type { ClientSpec, ClientState, Disposable, ServerClient, UriLike } from '../../src/clients';
import type { InputBoxOptionsLike, MessageOptionsLike, Prompts, QuickPickItemLike, QuickPickOptionsLike } from '../../src/palette';
import type { TraceLevel } from '../../src/settings';

export class FakeUri implements UriLike {
  readonly scheme: string;
  readonly fsPath: string;

  constructor(readonly path: string, scheme = 'file') {
    this.scheme = scheme;
    this.fsPath = path;
  }

  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export type Pick = { title: string | undefined; labels: string[] };
export type Input = { title: string | undefined; prompt: string | undefined; value: string | undefined; rejected: string[] };
export type Message = { level: 'error' | 'warning' | 'info'; text: string; actions: string[]; modal?: true };

/**
 * `vscode.window`: every quick pick, input box and message is recorded. A quick pick is
 * answered by `picks` (a label to choose, or undefined to press Escape); an input box by
 * `inputs` (what the user types, one attempt after another until `validateInput` — awaited,
 * it may ask the server — accepts one, or undefined for Escape); a message by `choices` (the button clicked, if any).
 */
export class FakeWindow implements Prompts {
  readonly picksShown: Pick[] = [];
  readonly inputsShown: Input[] = [];
  readonly messages: Message[] = [];
  readonly statusBar: string[] = [];
  readonly terminals: Array<{ name: string; shown: boolean; sent: string[] }> = [];
  picks: Array<string | undefined> = [];
  inputs: Array<string[] | undefined> = [];
  choices: Array<string | undefined> = [];

  showQuickPick<T extends QuickPickItemLike>(items: readonly T[], options: QuickPickOptionsLike): Promise<T | undefined> {
    this.picksShown.push({ title: options.title, labels: items.map((item) => item.label) });
    assert.ok(this.picks.length > 0, `unexpected quick pick "${options.title ?? ''}"`);
    const label = this.picks.shift();
    if (label === undefined) {
      return Promise.resolve(undefined);
    }
    const item = items.find((candidate) => candidate.label === label);
    assert.ok(item !== undefined, `no item "${label}" in quick pick "${options.title ?? ''}"`);
    return Promise.resolve(item);
  }

  async showInputBox(options: InputBoxOptionsLike): Promise<string | undefined> {
    const shown: Input = { title: options.title, prompt: options.prompt, value: options.value, rejected: [] };
    this.inputsShown.push(shown);
    assert.ok(this.inputs.length > 0, `unexpected input box "${options.title ?? ''}"`);
    const attempts = this.inputs.shift();
    if (attempts === undefined) {
      return undefined;
    }
    for (const text of attempts) {
      const problem = await options.validateInput?.(text); // VS Code waits for a pending validation on Enter
      if (problem === undefined || problem === null) {
        return text;
      }
      shown.rejected.push(problem);
    }
    return undefined; // nothing acceptable typed: the user gave up (Escape)
  }

  showErrorMessage(text: string, ...actions: string[]): Promise<string | undefined> {
    return this.message('error', text, actions);
  }

  showWarningMessage(text: string, ...actions: string[]): Promise<string | undefined>;
  showWarningMessage(text: string, options: MessageOptionsLike, ...actions: string[]): Promise<string | undefined>;
  showWarningMessage(text: string, ...rest: Array<string | MessageOptionsLike>): Promise<string | undefined> {
    const [first, ...others] = rest;
    if (typeof first === 'object') {
      return this.message('warning', text, others.filter((a) => typeof a === 'string'), first.modal === true);
    }
    return this.message('warning', text, rest.filter((a) => typeof a === 'string'));
  }

  showInformationMessage(text: string, ...actions: string[]): Promise<string | undefined> {
    return this.message('info', text, actions);
  }

  setStatusBarMessage(text: string): unknown {
    this.statusBar.push(text);
    return { dispose: () => undefined };
  }

  createTerminal(name: string): { show(): void; sendText(text: string): void } {
    const terminal = { name, shown: false, sent: [] as string[] };
    this.terminals.push(terminal);
    return {
      show: () => {
        terminal.shown = true;
      },
      sendText: (text) => {
        terminal.sent.push(text);
      },
    };
  }

  /** A message; `modal` (a dialog) is recorded only when set. */
  private message(level: Message['level'], text: string, actions: string[], modal = false): Promise<string | undefined> {
    this.messages.push(modal ? { level, text, actions, modal: true } : { level, text, actions });
    return Promise.resolve(actions.length > 0 ? this.choices.shift() : undefined);
  }
}

/** `vscode.LogOutputChannel`. */
export class FakeOutput {
  readonly lines: string[] = [];
  shown = 0;

  info(message: string): void {
    this.lines.push(`info ${message}`);
  }

  warn(message: string): void {
    this.lines.push(`warn ${message}`);
  }

  error(message: string): void {
    this.lines.push(`error ${message}`);
  }

  show(): void {
    this.shown++;
  }
}

export type Sent = { method: string; params: unknown };

/**
 * A `vscode-languageclient` client of a fake server: requests are answered by `answers`
 * (per method; a function gets the params), everything sent is recorded.
 */
export class FakeLanguageClient implements ServerClient {
  readonly requests: Sent[] = [];
  readonly notifications: Sent[] = [];
  readonly traces: TraceLevel[] = [];
  readonly handlers = new Map<string, (params: unknown) => void>();
  answers: Record<string, unknown | ((params: unknown) => unknown)> = {};
  declared: string[] = ['openprogram.run', 'openprogram.resume', 'openprogram.showRuns'];
  running = false;
  stopped = false;
  killed = false;
  private stateListeners: Array<(state: ClientState) => void> = [];
  private failPending: ((error: Error) => void) | undefined;

  constructor(readonly spec?: ClientSpec) {}

  /** When set, `start` is pending until `failStart`. */
  manualStart = false;

  start(): Promise<void> {
    this.emit('starting');
    if (this.manualStart) {
      return new Promise((_resolve, reject) => {
        this.failPending = reject;
      });
    }
    return new Promise((resolve) => this.started(resolve));
  }

  failStart(error: Error): void {
    this.emit('stopped');
    this.failPending?.(error);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.running = false;
    this.emit('stopped');
  }

  async sendRequest(method: string, params: unknown): Promise<unknown> {
    this.requests.push({ method, params });
    const answer = this.answers[method];
    if (typeof answer === 'function') {
      return (answer as (params: unknown) => unknown)(params);
    }
    return answer;
  }

  async sendNotification(method: string, params: unknown): Promise<void> {
    this.notifications.push({ method, params });
  }

  async setTrace(level: TraceLevel): Promise<void> {
    this.traces.push(level);
  }

  onNotification(method: string, handler: (params: unknown) => void): Disposable {
    this.handlers.set(method, handler);
    return { dispose: () => this.handlers.delete(method) };
  }

  onDidChangeState(listener: (state: ClientState) => void): Disposable {
    this.stateListeners.push(listener);
    return { dispose: () => (this.stateListeners = this.stateListeners.filter((other) => other !== listener)) };
  }

  asUri(uri: UriLike): string {
    return uri.toString();
  }

  declaredCommands(): readonly string[] {
    return this.declared;
  }

  async exited(): Promise<void> {}

  kill(): void {
    this.killed = true;
  }

  /** The server sent a notification. */
  notify(method: string, params: unknown): void {
    this.handlers.get(method)?.(params);
  }

  /** Commands sent with `workspace/executeCommand`, as `[command, ...arguments]`. */
  executed(): unknown[][] {
    return this.requests
      .filter((sent) => sent.method === 'workspace/executeCommand')
      .map((sent) => {
        const params = sent.params as { command: string; arguments: unknown[] };
        return [params.command, ...params.arguments];
      });
  }

  private started(resolve: () => void): void {
    this.running = true;
    this.emit('running');
    resolve();
  }

  private emit(state: ClientState): void {
    for (const listener of this.stateListeners) {
      listener(state);
    }
  }
}

/** Wait until `condition` holds (the extension's work is asynchronous); fails after many turns. */
export async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 2_000; turn++) {
    if (condition()) {
      return;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.fail(`never happened: ${what}`);
}
