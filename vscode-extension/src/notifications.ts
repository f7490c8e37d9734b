/**
 * Which server messages become notifications (pure: no `vscode` import). As in ruff-vscode,
 * `openprogram.showNotifications` is `off`, `onError`, `onWarning` (default) or `always`;
 * every message is logged to the output channel whatever the setting.
 */
import type { NotificationLevel } from './settings';

/** LSP `MessageType`: 1 error, 2 warning, 3 info, 4 log. */
export type MessageType = 1 | 2 | 3 | 4;

/** Results of ▶ Run / ⟳ Resume ("Run pipeline: completed …") are what the user asked for. */
const RESULT = /^(Run|Resume|Resumed|Runs of|No runs of)\b/;

export function shouldNotify(level: NotificationLevel, type: MessageType, message: string): boolean {
  if (type === 4) {
    return false;
  }
  switch (level) {
    case 'off':
      return false;
    case 'always':
      return true;
    case 'onError':
      return type === 1 || RESULT.test(message);
    case 'onWarning':
      return type <= 2 || RESULT.test(message);
  }
}
