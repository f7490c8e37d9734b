/**
 * The extension's settings and how they reach the language server (pure: no `vscode`).
 *
 * The same mapping feeds the `initializationOptions` of `initialize` and the answers to
 * the server's `workspace/configuration` requests (section `openprogram` and its
 * sub-sections), so both views always agree.
 */
import { expandPath } from './interpreter';

export type TraceLevel = 'off' | 'messages' | 'verbose';

export const SECTION = 'openprogram';

export type NotificationLevel = 'off' | 'onError' | 'onWarning' | 'always';

export interface Settings {
  interpreter: string;
  lint: { select: string[]; ignore: string[] };
  store: string;
  trace: TraceLevel;
  showNotifications: NotificationLevel;
}

export interface SettingsResult {
  settings: Settings;
  /** One line per ignored/invalid value, for the output channel. */
  problems: string[];
}

/**
 * What `initialize` carries and what `workspace/configuration` answers for `openprogram`.
 * Unset values are omitted (never sent as `[]` or `""`): an empty `select` would mean "no
 * rules" to the server and hide the `[tool.openprogram.lint]` configuration. The one
 * exception is `store`: `""` when unset, which tells the server to use its default store
 * (over a value it was given before).
 */
export interface ServerConfiguration {
  lint: { select?: string[]; ignore?: string[] };
  store?: string;
  interpreter?: string;
}

export const DEFAULT_SETTINGS: Settings = {
  interpreter: '',
  lint: { select: [], ignore: [] },
  store: '',
  trace: 'off',
  showNotifications: 'onWarning',
};

const NOTIFICATION_LEVELS: readonly NotificationLevel[] = ['off', 'onError', 'onWarning', 'always'];

function readNotifications(get: SettingsReader, problems: string[]): NotificationLevel {
  const value = get('showNotifications');
  if (value === undefined || value === null) {
    return 'onWarning';
  }
  if (NOTIFICATION_LEVELS.includes(value as NotificationLevel)) {
    return value as NotificationLevel;
  }
  problems.push(`openprogram.showNotifications: expected one of ${NOTIFICATION_LEVELS.join(', ')}, got ${JSON.stringify(value)}; using "onWarning"`);
  return 'onWarning';
}

/** A rule code or code prefix, as ruff accepts them: `OP`, `OP2`, `OP203`, `ALL`. */
const CODE_PATTERN = /^(ALL|[A-Z]+[0-9]*)$/;

/** Reads one key below the `openprogram` section (e.g. `lint.select`). */
export type SettingsReader = (key: string) => unknown;

function readString(get: SettingsReader, key: string, problems: string[]): string {
  const value = get(key);
  if (value === undefined || value === null) {
    return '';
  }
  if (typeof value !== 'string') {
    problems.push(`openprogram.${key}: expected a string, got ${typeName(value)}; ignored`);
    return '';
  }
  return value.trim();
}

function readCodes(get: SettingsReader, key: string, problems: string[]): string[] {
  const value = get(key);
  if (value === undefined || value === null) {
    return [];
  }
  if (!Array.isArray(value)) {
    problems.push(`openprogram.${key}: expected a list of rule codes, got ${typeName(value)}; ignored`);
    return [];
  }
  const codes: string[] = [];
  for (const item of value) {
    if (typeof item !== 'string') {
      problems.push(`openprogram.${key}: ignored non-string entry ${JSON.stringify(item)}`);
      continue;
    }
    const code = item.trim().toUpperCase();
    if (!CODE_PATTERN.test(code)) {
      problems.push(`openprogram.${key}: ignored ${JSON.stringify(item)} (not a rule code like "OP203")`);
      continue;
    }
    if (!codes.includes(code)) {
      codes.push(code);
    }
  }
  return codes;
}

function readTrace(get: SettingsReader, problems: string[]): TraceLevel {
  const value = get('trace.server');
  if (value === undefined || value === null || value === 'off') {
    return 'off';
  }
  if (value === 'messages' || value === 'verbose') {
    return value;
  }
  problems.push(`openprogram.trace.server: expected "off", "messages" or "verbose", got ${JSON.stringify(value)}; using "off"`);
  return 'off';
}

function typeName(value: unknown): string {
  if (Array.isArray(value)) {
    return 'a list';
  }
  return value === null ? 'null' : `a ${typeof value}`;
}

/** Validate and normalise raw setting values. Invalid values fall back to defaults. */
export function readSettings(get: SettingsReader): SettingsResult {
  const problems: string[] = [];
  const settings: Settings = {
    interpreter: readString(get, 'interpreter', problems),
    lint: {
      select: readCodes(get, 'lint.select', problems),
      ignore: readCodes(get, 'lint.ignore', problems),
    },
    store: readString(get, 'store', problems),
    trace: readTrace(get, problems),
    showNotifications: readNotifications(get, problems),
  };
  return { settings, problems };
}

/**
 * The server-side view of the settings. `interpreter` is the configured interpreter (the
 * one that runs Programs for Run/Resume; pass undefined when none is configured so the
 * server picks `<workspace>/.venv` or its own); `store` is expanded (a `postgresql://` URL is
 * kept as written) and `''` when unset, so the server uses its default (`$OPENPROGRAM_STORE`
 * or `.openprogram` in each workspace folder), also after the setting is cleared.
 */
export function toServerConfiguration(
  settings: Settings,
  interpreter: string | undefined,
  workspaceFolder?: string,
): ServerConfiguration {
  const config: ServerConfiguration = { lint: {} };
  if (settings.lint.select.length > 0) {
    config.lint.select = [...settings.lint.select];
  }
  if (settings.lint.ignore.length > 0) {
    config.lint.ignore = [...settings.lint.ignore];
  }
  if (interpreter !== undefined && interpreter !== '') {
    config.interpreter = interpreter;
  }
  // an unset store is sent as '' (not left out): the server then uses its default store,
  // also over a value it was given before (clearing the setting takes effect at once)
  config.store = settings.store === '' ? '' : isStoreUrl(settings.store) ? settings.store.trim() : expandPath(settings.store, workspaceFolder);
  return config;
}

/**
 * Whether a store setting names a PostgreSQL database (`postgresql://…`, `postgres://…`):
 * passed on as written, never expanded as a path (resolving it against the folder gave
 * `<folder>/postgresql:/host/db`, a directory).
 */
export function isStoreUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//.test(value.trim());
}

/** `initializationOptions` for the `initialize` request. */
export function toInitializationOptions(
  settings: Settings,
  interpreter: string | undefined,
  workspaceFolder?: string,
): ServerConfiguration {
  return toServerConfiguration(settings, interpreter, workspaceFolder);
}

/**
 * Answer one `workspace/configuration` item. `openprogram` gives the whole server
 * configuration, a dotted sub-section (`openprogram.lint`, `openprogram.lint.select`) the
 * matching part; any other section gets `null` (LSP: "no value").
 */
export function answerConfigurationItem(
  section: string | undefined,
  config: ServerConfiguration,
): unknown {
  if (section === undefined || section === '') {
    return { [SECTION]: config };
  }
  if (section === SECTION) {
    return config;
  }
  if (!section.startsWith(`${SECTION}.`)) {
    return null;
  }
  let node: unknown = config;
  for (const part of section.slice(SECTION.length + 1).split('.')) {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) {
      return null;
    }
    const record = node as Record<string, unknown>;
    if (!Object.prototype.hasOwnProperty.call(record, part)) {
      return null;
    }
    node = record[part];
  }
  return node === undefined ? null : node;
}

/**
 * Answer a whole `workspace/configuration` request (one result per item, in order). Each
 * item is answered from `configFor(item.scopeUri)`: a workspace folder's own settings when
 * the server asks with its `scopeUri` (resource-scoped settings differ per folder), the
 * window's without one.
 */
export async function answerConfiguration(
  items: ReadonlyArray<{ section?: string | undefined; scopeUri?: string | undefined }>,
  configFor: (scopeUri: string | undefined) => ServerConfiguration | Promise<ServerConfiguration>,
): Promise<unknown[]> {
  const byScope = new Map<string | undefined, Promise<ServerConfiguration>>();
  return Promise.all(
    items.map(async (item) => {
      let config = byScope.get(item.scopeUri);
      if (config === undefined) {
        config = Promise.resolve(configFor(item.scopeUri));
        byScope.set(item.scopeUri, config);
      }
      return answerConfigurationItem(item.section, await config);
    }),
  );
}

export interface SettingsChange {
  /** The interpreter changed: a new server process is needed. */
  restart: boolean;
  /** Lint selection or store changed: sent with `workspace/didChangeConfiguration`. */
  configuration: boolean;
  trace: boolean;
}

/**
 * What a settings change requires. Only a new interpreter needs a new server; the lint
 * selection and the store reach the running server with `didChangeConfiguration` (as
 * ruff-vscode does), the trace level with `setTrace`; `showNotifications` is client-side.
 */
export function classifyChange(before: Settings, after: Settings): SettingsChange {
  const same = (a: string[], b: string[]): boolean =>
    a.length === b.length && a.every((value, index) => value === b[index]);
  return {
    restart: before.interpreter !== after.interpreter,
    configuration:
      before.store !== after.store || !same(before.lint.select, after.lint.select) || !same(before.lint.ignore, after.lint.ignore),
    trace: before.trace !== after.trace,
  };
}
