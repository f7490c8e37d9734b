/** Status-bar presentation of the server state (pure: no `vscode` import). */

export type ServerState = 'starting' | 'running' | 'restarting' | 'stopped' | 'failed' | 'not-installed';

export interface StatusView {
  text: string;
  tooltip: string;
  /** `true` renders with the error background. */
  error: boolean;
}

export function statusView(state: ServerState, detail = ''): StatusView {
  const suffix = detail !== '' ? `\n${detail}` : '';
  switch (state) {
    case 'starting':
      return { text: '$(sync~spin) OpenProgram', tooltip: `OpenProgram: starting the language server${suffix}`, error: false };
    case 'running':
      return { text: '$(check) OpenProgram', tooltip: `OpenProgram: language server running${suffix}`, error: false };
    case 'restarting':
      return { text: '$(sync~spin) OpenProgram', tooltip: `OpenProgram: restarting the language server${suffix}`, error: false };
    case 'stopped':
      return { text: '$(circle-slash) OpenProgram', tooltip: `OpenProgram: language server stopped${suffix}`, error: false };
    case 'failed':
      return { text: '$(error) OpenProgram', tooltip: `OpenProgram: language server failed${suffix}`, error: true };
    case 'not-installed':
      return { text: '$(warning) OpenProgram', tooltip: `OpenProgram: not available in this interpreter${suffix}`, error: true };
  }
}
