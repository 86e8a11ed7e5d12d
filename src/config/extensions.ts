/**
 * gemini-cli extensions, read from the server's own EXTENSIONS_DIR (never from a workspace,
 * where the model can write): each subdirectory holding a `gemini-extension.json`
 * (`name`, `version`, `mcpServers`, `contextFileName`, `excludeTools`, as gemini-cli defines them).
 *
 * Everything is checked before anything is used, and a broken extension is skipped with its
 * reason (the caller logs it), never a crash: the directory and every file it names must lie
 * inside EXTENSIONS_DIR once symlinks are resolved (a link out, or a gemini-cli "link" install
 * pointing elsewhere, is refused), context files must be regular files inside the extension, and
 * the MCP server entries get the same strict parse as SETTINGS_FILE's (by the caller, through the
 * MCP layer). Read once, at boot.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isObject } from '../lib/is-object.js';

export const EXTENSION_CONFIG_FILE = 'gemini-extension.json';
/** Written by `gemini extensions install`: where the extension came from. */
export const INSTALL_METADATA_FILE = '.gemini-extension-install.json';
/** The context file gemini-cli reads when `contextFileName` is not set. */
export const DEFAULT_CONTEXT_FILE = 'GEMINI.md';
/** A context file beyond this is cut (as the workspace's GEMINI.md is). */
export const MAX_CONTEXT_BYTES = 64 * 1024;
/** A `gemini-extension.json` beyond this is refused. */
const MAX_CONFIG_BYTES = 1024 * 1024;
/** gemini-cli's rule for extension names. */
const NAME = /^[A-Za-z0-9-]+$/;
const KNOWN_KEYS = ['name', 'version', 'mcpServers', 'contextFileName', 'excludeTools'];

/** One extension that passed every check. */
export interface LoadedExtension {
  name: string;
  version: string;
  /** The extension's directory (real path, inside EXTENSIONS_DIR). */
  path: string;
  /** Its `gemini-extension.json`, for messages. */
  configFile: string;
  /** The context files that exist, in the order named, with their text. */
  contextFiles: Array<{ path: string; text: string }>;
  /** As written (gemini-cli's variables filled in, relative `cwd`s made absolute); the MCP layer checks them. */
  mcpServers?: Record<string, Record<string, unknown>>;
  excludeTools?: string[];
  /** `.gemini-extension-install.json`, when present and a JSON object. */
  installMetadata?: Record<string, unknown>;
  /** What was ignored (unknown keys, `trust`): logged, not fatal. */
  warnings: string[];
}

export interface ExtensionsLoad {
  /** EXTENSIONS_DIR as configured; undefined when extensions are off. */
  dir?: string;
  extensions: LoadedExtension[];
  /** Entries that are not loaded, each with the reason. */
  skipped: Array<{ path: string; reason: string }>;
}

class Refusal extends Error {}

const isWithin = (root: string, p: string) => {
  const rel = path.relative(root, p);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
};

/**
 * Loads every extension in `dir` (sorted by directory name; the first of a name wins). A missing
 * directory has no extensions. Never throws: a problem skips the one extension it is in.
 */
export function loadExtensions(dir: string | undefined): ExtensionsLoad {
  if (dir === undefined) return { extensions: [], skipped: [] };
  let root: string;
  let names: string[];
  try {
    root = fs.realpathSync(dir);
    names = fs.readdirSync(root).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { dir, extensions: [], skipped: [] };
    return { dir, extensions: [], skipped: [{ path: dir, reason: `EXTENSIONS_DIR cannot be read (${code ?? (err as Error).message})` }] };
  }
  const out: ExtensionsLoad = { dir, extensions: [], skipped: [] };
  const byName = new Map<string, string>();
  for (const entry of names) {
    const given = path.join(root, entry);
    try {
      const ext = loadExtension(root, given);
      if (ext === undefined) continue;
      const first = byName.get(ext.name);
      if (first !== undefined) throw new Refusal(`an extension named "${ext.name}" is already loaded from ${first}`);
      byName.set(ext.name, ext.path);
      out.extensions.push(ext);
    } catch (err) {
      // Whatever went wrong (a file that cannot be opened included), this extension is skipped, not the server.
      const reason =
        err instanceof Refusal ? err.message : `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
      out.skipped.push({ path: given, reason });
    }
  }
  return out;
}

/** The extension in `given` (an entry of `root`), undefined for a plain file; throws Refusal. */
function loadExtension(root: string, given: string): LoadedExtension | undefined {
  let real: string;
  let stat: fs.Stats;
  try {
    real = fs.realpathSync(given);
    stat = fs.statSync(real);
  } catch (err) {
    throw new Refusal(`cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!isWithin(root, real) || real === root) {
    throw new Refusal(`is a link to ${real}, outside EXTENSIONS_DIR (only extensions inside it are loaded)`);
  }
  if (!stat.isDirectory()) return undefined; // e.g. gemini-cli's extension-enablement.json
  const configFile = path.join(real, EXTENSION_CONFIG_FILE);
  const raw = parseJsonFile(real, EXTENSION_CONFIG_FILE, MAX_CONFIG_BYTES);
  if (raw === undefined) throw new Refusal(`has no ${EXTENSION_CONFIG_FILE}`);
  if (!isObject(raw)) throw new Refusal(`${configFile} must hold a JSON object`);
  const installMetadata = readInstallMetadata(real);
  if (installMetadata?.type === 'link') {
    throw new Refusal(
      `is a gemini-cli link install of ${String(installMetadata.source)}; only extensions inside EXTENSIONS_DIR are loaded`,
    );
  }
  const at = configFile;
  const name = requiredString(raw.name, `${at}: "name"`);
  if (!NAME.test(name)) throw new Refusal(`${at}: "name" "${name}" may only contain letters, digits and "-"`);
  const warnings: string[] = [];
  const unknown = Object.keys(raw).filter((k) => !KNOWN_KEYS.includes(k));
  if (unknown.length > 0) warnings.push(`${at}: ignored keys this server does not support: ${unknown.join(', ')}`);
  const ext: LoadedExtension = {
    name,
    version: requiredString(raw.version, `${at}: "version"`),
    path: real,
    configFile,
    contextFiles: contextFiles(real, raw.contextFileName, `${at}: "contextFileName"`),
    warnings,
  };
  if (raw.mcpServers !== undefined) ext.mcpServers = mcpServers(real, raw.mcpServers, `${at}: "mcpServers"`, warnings);
  if (raw.excludeTools !== undefined) ext.excludeTools = stringList(raw.excludeTools, `${at}: "excludeTools"`);
  if (installMetadata !== undefined) ext.installMetadata = installMetadata;
  return ext;
}

function requiredString(v: unknown, at: string): string {
  if (v === undefined) throw new Refusal(`${at} is missing`);
  if (typeof v !== 'string' || v.trim() === '') throw new Refusal(`${at} must be a non-empty string`);
  return v;
}

function stringList(v: unknown, at: string): string[] {
  if (!Array.isArray(v)) throw new Refusal(`${at} must be an array of strings`);
  const i = v.findIndex((s) => typeof s !== 'string' || s.trim() === '');
  if (i >= 0) throw new Refusal(`${at}[${i}] must be a non-empty string`);
  return [...(v as string[])];
}

/**
 * The real path of `rel` inside the extension `dir`, or undefined when nothing is there.
 * A path out of the extension (absolute, `..`, or a link leading out) is refused.
 */
function inside(dir: string, rel: string, at?: string): string | undefined {
  const where = at === undefined ? path.join(dir, rel) : `${at} "${rel}"`;
  if (path.isAbsolute(rel) || !isWithin(dir, path.resolve(dir, rel))) {
    throw new Refusal(`${where} must be a path inside the extension's directory`);
  }
  let real: string;
  try {
    real = fs.realpathSync(path.resolve(dir, rel));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Refusal(`${where} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!isWithin(dir, real)) throw new Refusal(`${where} is a link to ${real}, outside the extension's directory`);
  return real;
}

/** A regular file's bytes (at most `max`; `truncate` cuts, otherwise a larger file is refused). */
function readRegular(file: string, max: number, at: string, truncate: boolean): { text: string; cut: boolean } {
  // O_NONBLOCK: a FIFO is not waited on; fstat then refuses it.
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW);
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new Refusal(`${at} is not a regular file`);
    if (stat.size > max && !truncate) throw new Refusal(`${at} is ${stat.size} bytes (at most ${max})`);
    const buf = Buffer.alloc(Math.min(stat.size, max));
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    return { text: buf.subarray(0, n).toString('utf8'), cut: stat.size > max };
  } finally {
    fs.closeSync(fd);
  }
}

/** `rel`'s JSON inside `dir`, undefined when it does not exist; unparsable JSON is refused. */
function parseJsonFile(dir: string, rel: string, max: number): unknown {
  const real = inside(dir, rel);
  if (real === undefined) return undefined;
  const at = path.join(dir, rel);
  const { text } = readRegular(real, max, at, false);
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Refusal(`${at} is not valid JSON (${(err as Error).message})`);
  }
}

/** gemini-cli reads it leniently: an unreadable or malformed file counts as absent. */
function readInstallMetadata(dir: string): Record<string, unknown> | undefined {
  try {
    const raw = parseJsonFile(dir, INSTALL_METADATA_FILE, MAX_CONFIG_BYTES);
    return isObject(raw) ? raw : undefined;
  } catch {
    return undefined;
  }
}

/** `contextFileName` (a string or an array; default GEMINI.md): the files that exist, read. */
function contextFiles(dir: string, raw: unknown, at: string): LoadedExtension['contextFiles'] {
  let names: string[];
  if (raw === undefined) names = [DEFAULT_CONTEXT_FILE];
  else if (typeof raw === 'string' && raw.trim() !== '') names = [raw];
  else if (Array.isArray(raw)) names = stringList(raw, at);
  else throw new Refusal(`${at} must be a file name or an array of file names`);
  const out: LoadedExtension['contextFiles'] = [];
  for (const name of names) {
    const real = inside(dir, name, at);
    if (real === undefined) continue; // gemini-cli reads the named files that exist
    const { text, cut } = readRegular(real, MAX_CONTEXT_BYTES, `${at} "${name}"`, true);
    out.push({ path: real, text: cut ? `${text}\n[… ${name} truncated at ${MAX_CONTEXT_BYTES} bytes]` : text });
  }
  return out;
}

/** gemini-cli's extension variables: `${extensionPath}`, `${/}` and `${pathSeparator}`; others stay as written. */
function hydrate(value: unknown, dir: string, at: string): unknown {
  if (typeof value === 'string') {
    if (value.includes('${workspacePath}')) {
      throw new Refusal(`${at} uses \${workspacePath}: an extension's MCP servers serve every workspace, so it has no value here`);
    }
    return value.replace(/\$\{(extensionPath|\/|pathSeparator)\}/g, (_m, key: string) => (key === 'extensionPath' ? dir : path.sep));
  }
  if (Array.isArray(value)) return value.map((v, i) => hydrate(v, dir, `${at}[${i}]`));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, hydrate(v, dir, `${at}.${k}`)]));
  return value;
}

/**
 * The server entries, shaped for the MCP layer's strict parse: variables filled in, a relative
 * `cwd` resolved against the extension's directory, `trust` dropped (as gemini-cli drops it: an
 * extension cannot vouch for itself).
 */
function mcpServers(dir: string, raw: unknown, at: string, warnings: string[]): Record<string, Record<string, unknown>> {
  if (!isObject(raw)) throw new Refusal(`${at} must be an object mapping server names to server configs`);
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, entry] of Object.entries(raw)) {
    if (!isObject(entry)) throw new Refusal(`${at}.${name} must be an object with either command or url`);
    const { trust, ...rest } = hydrate(entry, dir, `${at}.${name}`) as Record<string, unknown>;
    if (trust !== undefined) warnings.push(`${at}.${name}.trust is ignored: an extension's servers ask like any MCP server`);
    if (typeof rest.cwd === 'string' && !path.isAbsolute(rest.cwd)) rest.cwd = path.resolve(dir, rest.cwd);
    out[name] = rest;
  }
  return out;
}
