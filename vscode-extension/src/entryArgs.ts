/**
 * The arguments prompt of ▶ Run (pure: no `vscode` import): pre-filled from the entry's
 * signature (`openprogram/entrySignature`, read statically by the server), validated by the
 * server as they are typed (`openprogram/checkEntryArgs`, the check `openprogram run` makes),
 * remembered per entry. Only the JSON shape is checked here.
 */
import { parseEntryArgs, type JsonObject } from './commands';

export interface EntryParam {
  name: string;
  annotation: string | null;
  required: boolean;
  default: unknown;
}

export interface EntrySignature {
  entry: string;
  params: EntryParam[];
  template: JsonObject;
}

/** The key under which the last arguments of `entry` in `uri` are remembered. */
export function rememberKey(uri: string, entry: string): string {
  return `openprogram.args:${uri}#${entry}`;
}

/** The text the prompt opens with: the remembered arguments, else the signature's template. */
export function initialArgsText(signature: EntrySignature | null | undefined, remembered: string | undefined): string {
  if (remembered !== undefined && parseEntryArgs(remembered).ok) {
    return remembered;
  }
  if (signature === null || signature === undefined) {
    return '{}';
  }
  return JSON.stringify(signature.template);
}

/** One line that tells which parameters the entry takes: `topic: str, sections: int = 3`. */
export function signatureHint(signature: EntrySignature | null | undefined): string {
  if (signature === null || signature === undefined || signature.params.length === 0) {
    return 'Keyword arguments as a JSON object (empty for none)';
  }
  const parts = signature.params.map((p) => {
    const annotation = p.annotation !== null ? `: ${p.annotation}` : '';
    return p.required ? `${p.name}${annotation}` : `${p.name}${annotation} = ${JSON.stringify(p.default)}`;
  });
  return `${signature.entry}(${parts.join(', ')})`;
}

/**
 * The server's check of keyword arguments for the entry (`openprogram/checkEntryArgs`): the
 * lines of its problems (empty when they fit), or undefined when it gave no answer (not
 * running, failed, or too slow: the Run check refuses later if need be).
 */
export type ArgsCheck = (argsText: string) => Promise<readonly string[] | undefined>;

/**
 * Validation of the arguments prompt (undefined when acceptable): the text must be a JSON
 * object (said here), and the arguments must fit the entry, which only the server judges —
 * its lines are shown as it words them, the way `openprogram run` refuses them.
 */
export function validateWith(check: ArgsCheck): (text: string) => Promise<string | undefined> {
  return async (text: string) => {
    const parsed = parseEntryArgs(text);
    if (!parsed.ok) {
      return parsed.error;
    }
    const problems = await check(text);
    return problems !== undefined && problems.length > 0 ? problems.join('; ') : undefined;
  };
}

/** The server's `{problems}` answer, or undefined when it is not one. */
export function asProblems(value: unknown): string[] | undefined {
  if (value === null || typeof value !== 'object') {
    return undefined;
  }
  const problems = (value as { problems?: unknown }).problems;
  return Array.isArray(problems) && problems.every((p) => typeof p === 'string') ? (problems as string[]) : undefined;
}

/** `promise`'s value, or `late` when it has not settled within `ms`. */
export function within<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<L>((resolve) => {
    timer = setTimeout(() => resolve(late), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The server's answer as a signature, or null when it is not one. */
export function asSignature(value: unknown): EntrySignature | null {
  if (value === null || typeof value !== 'object') {
    return null;
  }
  const v = value as Partial<EntrySignature>;
  if (typeof v.entry !== 'string' || !Array.isArray(v.params) || v.template === null || typeof v.template !== 'object') {
    return null;
  }
  return v as EntrySignature;
}
