/**
 * The arguments prompt of ▶ Run (pure: no `vscode` import): pre-filled from the entry's
 * signature (`openprogram/entrySignature`, read statically by the server), validated
 * against it before the run, remembered per entry.
 */
import { parseEntryArgs, type JsonObject, type ParseResult } from './commands';

export interface EntryParam {
  name: string;
  annotation: string | null;
  /** `int` | `float` | `str` | `bool` | `list` | `dict`, or null when not checked. */
  type: string | null;
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

function typeOf(value: unknown): string {
  if (value === null) {
    return 'null';
  }
  if (Array.isArray(value)) {
    return 'list';
  }
  switch (typeof value) {
    case 'string':
      return 'str';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(value) ? 'int' : 'float';
    case 'object':
      return 'dict';
    default:
      return typeof value;
  }
}

function matches(expected: string, value: unknown, param: EntryParam): boolean {
  const actual = typeOf(value);
  if (actual === 'null') {
    // None is fine where it is the default or the annotation says Optional / `| None`.
    return !param.required || /None|Optional/.test(param.annotation ?? '');
  }
  return actual === expected || (expected === 'float' && actual === 'int');
}

/** Parse and check the arguments against the signature (unknown, missing, wrongly typed). */
export function checkEntryArgs(text: string, signature: EntrySignature | null | undefined): ParseResult<JsonObject> {
  const parsed = parseEntryArgs(text);
  if (!parsed.ok || signature === null || signature === undefined) {
    return parsed;
  }
  const names = signature.params.map((p) => p.name);
  for (const key of Object.keys(parsed.value)) {
    if (!names.includes(key)) {
      const takes = names.length > 0 ? `it takes ${names.join(', ')}` : 'it takes no arguments';
      return { ok: false, error: `${signature.entry} has no parameter "${key}": ${takes}` };
    }
  }
  for (const param of signature.params) {
    if (!(param.name in parsed.value)) {
      if (param.required) {
        return { ok: false, error: `${signature.entry} needs "${param.name}"${param.annotation !== null ? ` (${param.annotation})` : ''}` };
      }
      continue;
    }
    const value = parsed.value[param.name];
    if (param.type !== null && !matches(param.type, value, param)) {
      return { ok: false, error: `"${param.name}" must be ${param.annotation ?? param.type}, got ${typeOf(value)} ${JSON.stringify(value)}` };
    }
  }
  return parsed;
}

/** Validation message for the input box (undefined when acceptable). */
export function validateAgainst(signature: EntrySignature | null | undefined): (text: string) => string | undefined {
  return (text: string) => {
    const result = checkEntryArgs(text, signature);
    return result.ok ? undefined : result.error;
  };
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
