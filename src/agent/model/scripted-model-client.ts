/**
 * A ModelClient that replays a JSON script: the bundled demo when no credentials are
 * configured, and a deterministic model for benchmarks and end-to-end tests.
 *
 * Stateless: the step to play is derived from the request alone (how many model turns
 * follow the latest user prompt), so one instance serves any number of concurrent
 * conversations.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { ModelChunk, ModelClient, ModelContent, ModelOutcome, ModelPart, ModelRequest } from './model-client.js';
import type { AgentArtifact, ArtifactPart } from '../wire/agent-events.js';

/** A step that streams fixed chunks, each chunk a list of parts (text, thought, functionCall…). */
export interface ScriptChunksStep {
  chunks: ModelPart[][];
  /** Artifacts streamed after the chunks, one chunk each (A2A §4.1.7). */
  artifacts?: AgentArtifact[];
  /** How the step ends the task when it makes no function call (default `completed`). */
  outcome?: ModelOutcome;
  /** Milliseconds to wait before each chunk (simulates a model's pace). */
  delayMs?: number;
}

/** A step that answers `You said: <latest user text>` in one chunk. */
export interface ScriptEchoStep {
  echo: true;
  delayMs?: number;
}

export type ScriptStep = ScriptChunksStep | ScriptEchoStep;

export interface ScriptEntry {
  /** A RegExp source (no flags: case-sensitive) tested against the latest user text; absent = always matches. */
  when?: string;
  /** A RegExp source tested against the A2A messageId of the latest user message; absent = always matches. */
  messageId?: string;
  /** Step N is played when N model turns follow the latest user prompt. */
  steps: ScriptStep[];
}

export interface ModelScript {
  /** The model name reported in events. Default `scripted`. */
  model?: string;
  /** The first entry whose `when` matches is played. */
  scripts: ScriptEntry[];
}

/** Text of the chunk played once a conversation has run past the script's last step. */
export const SCRIPT_FINISHED_TEXT = '(script finished)';
/** Text of the chunk played when no entry's `when` matches. */
export const NO_SCRIPT_MATCH_TEXT = '(no script matches this prompt)';

/** The bundled conformance script: the A2A TCK's SUT contract, keyed on messageId prefixes. */
export const CONFORMANCE_SCRIPT_FILE = fileURLToPath(new URL('./conformance-script.json', import.meta.url));

/** The bundled demo script (next to this module, so it resolves from `src/` under tsx). */
export const DEMO_SCRIPT_FILE = fileURLToPath(new URL('./demo-script.json', import.meta.url));

export class ScriptedModelClient implements ModelClient {
  readonly model: string;
  readonly #entries: ReadonlyArray<{ when?: RegExp; messageId?: RegExp; steps: ScriptStep[] }>;

  /** `script` should come from `parseModelScript`/`loadModelScript`; it is validated again here. */
  constructor(script: ModelScript) {
    const checked = parseModelScript(script, 'ScriptedModelClient script');
    this.model = checked.model ?? 'scripted';
    this.#entries = checked.scripts.map((e) => ({
      when: e.when === undefined ? undefined : new RegExp(e.when),
      messageId: e.messageId === undefined ? undefined : new RegExp(e.messageId),
      steps: structuredClone(e.steps),
    }));
  }

  async *generate(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelChunk> {
    throwIfAborted(signal);
    const { text, stepIndex } = locatePrompt(request.contents);
    const id = request.messageId ?? '';
    const entry = this.#entries.find(
      (e) => (e.when === undefined || e.when.test(text)) && (e.messageId === undefined || e.messageId.test(id)),
    );
    if (entry === undefined) {
      yield { parts: [{ text: NO_SCRIPT_MATCH_TEXT }] };
      return;
    }
    const step = entry.steps[stepIndex];
    if (step === undefined) {
      yield { parts: [{ text: SCRIPT_FINISHED_TEXT }] };
      return;
    }
    const chunks = 'echo' in step ? [[{ text: `You said: ${text}` }]] : step.chunks;
    for (const parts of chunks) {
      if (step.delayMs) await delay(step.delayMs, undefined, { signal });
      throwIfAborted(signal);
      // A copy, so a consumer that mutates what it receives cannot alter the script.
      yield { parts: structuredClone(parts) };
    }
    if ('echo' in step) return;
    for (const artifact of step.artifacts ?? []) yield { parts: [], artifacts: [structuredClone(artifact)] };
    if (step.outcome !== undefined) yield { parts: [], outcome: { ...step.outcome } };
    throwIfAborted(signal);
  }
}

/**
 * Finds the latest user message that carries text (not a functionResponse turn) and
 * counts the model turns after it: that count is the step to play.
 */
export function locatePrompt(contents: ModelContent[]): { text: string; stepIndex: number } {
  let index = contents.length - 1;
  while (index >= 0 && !isUserPrompt(contents[index] as ModelContent)) index--;
  const found = contents[index];
  const text = found !== undefined ? promptText(found) : '';
  const stepIndex = contents.slice(index + 1).filter((c) => c.role === 'model').length;
  return { text, stepIndex };
}

function isUserPrompt(content: ModelContent): boolean {
  return (
    content.role === 'user' &&
    content.parts.some((p) => typeof p.text === 'string' && !p.thought) &&
    !content.parts.some((p) => p.functionResponse !== undefined)
  );
}

function promptText(content: ModelContent): string {
  return content.parts
    .filter((p) => typeof p.text === 'string' && !p.thought)
    .map((p) => p.text)
    .join('\n');
}

function throwIfAborted(signal: AbortSignal): void {
  if (!signal.aborted) return;
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') throw reason;
  const err = new Error('The model call was aborted', { cause: reason });
  err.name = 'AbortError';
  throw err;
}

/** Reads and validates a script file; errors name the file (and the bad field). */
export function loadModelScript(file: string): ModelScript {
  let raw: string;
  try {
    raw = readFileSync(file, 'utf8');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (err as Error).message;
    throw new Error(`Cannot read model script ${file}: ${why}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new Error(`Model script ${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  return parseModelScript(json, file);
}

/** Loads the bundled demo script. */
export function loadDemoScript(): ModelScript {
  return loadModelScript(DEMO_SCRIPT_FILE);
}

// ---- validation -------------------------------------------------------------------

type Obj = Record<string, unknown>;

class ScriptShapeError extends Error {}

/**
 * Validates `json` as a ModelScript and returns a typed copy. Throws an Error of the
 * form `<source>: <field path>: <problem>`, e.g. `demo.json: scripts[0].steps[1].chunks[0][0].functionCall.name: must be a non-empty string`.
 */
export function parseModelScript(json: unknown, source: string): ModelScript {
  try {
    const root = object(json, '(root)');
    onlyKeys(root, ['model', 'scripts'], '');
    const scripts = array(root.scripts, 'scripts');
    if (scripts.length === 0) throw new ScriptShapeError('scripts: must hold at least one entry');
    const out: ModelScript = { scripts: scripts.map((e, i) => parseEntry(e, `scripts[${i}]`)) };
    if (root.model !== undefined) out.model = nonEmptyString(root.model, 'model');
    return out;
  } catch (err) {
    if (err instanceof ScriptShapeError) throw new Error(`${source}: ${err.message}`, { cause: err });
    throw err;
  }
}

function parseEntry(value: unknown, path: string): ScriptEntry {
  const entry = object(value, path);
  onlyKeys(entry, ['when', 'messageId', 'steps'], path);
  const out: ScriptEntry = { steps: array(entry.steps, `${path}.steps`).map((s, i) => parseStep(s, `${path}.steps[${i}]`)) };
  if (entry.when !== undefined) {
    const when = string(entry.when, `${path}.when`);
    try {
      new RegExp(when);
    } catch (err) {
      throw new ScriptShapeError(`${path}.when: not a valid regular expression (${(err as Error).message})`);
    }
    out.when = when;
  }
  if (entry.messageId !== undefined) out.messageId = regExpSource(entry.messageId, `${path}.messageId`);
  return out;
}

function parseStep(value: unknown, path: string): ScriptStep {
  const step = object(value, path);
  const delayMs = step.delayMs === undefined ? undefined : nonNegative(step.delayMs, `${path}.delayMs`);
  if (step.echo !== undefined) {
    onlyKeys(step, ['echo', 'delayMs'], path);
    if (step.echo !== true) throw new ScriptShapeError(`${path}.echo: must be true`);
    return delayMs === undefined ? { echo: true } : { echo: true, delayMs };
  }
  onlyKeys(step, ['chunks', 'artifacts', 'outcome', 'delayMs'], path);
  if (step.chunks === undefined && step.artifacts === undefined && step.outcome === undefined) {
    throw new ScriptShapeError(`${path}: needs "chunks", "artifacts" or "outcome" (or "echo": true)`);
  }
  const chunks = array(step.chunks ?? [], `${path}.chunks`).map((c, i) => {
    const parts = array(c, `${path}.chunks[${i}]`);
    if (parts.length === 0) throw new ScriptShapeError(`${path}.chunks[${i}]: must hold at least one part`);
    return parts.map((p, j) => parsePart(p, `${path}.chunks[${i}][${j}]`));
  });
  const out: ScriptChunksStep = { chunks };
  if (step.artifacts !== undefined)
    out.artifacts = array(step.artifacts, `${path}.artifacts`).map((a, i) => parseArtifact(a, `${path}.artifacts[${i}]`));
  if (step.outcome !== undefined) out.outcome = parseOutcome(step.outcome, `${path}.outcome`);
  if (delayMs !== undefined) out.delayMs = delayMs;
  return out;
}

function regExpSource(value: unknown, path: string): string {
  const source = string(value, path);
  try {
    new RegExp(source);
  } catch (err) {
    throw new ScriptShapeError(`${path}: not a valid regular expression (${(err as Error).message})`);
  }
  return source;
}

const OUTCOMES: ReadonlyArray<ModelOutcome['state']> = ['completed', 'input-required', 'rejected'];

function parseOutcome(value: unknown, path: string): ModelOutcome {
  const o = object(value, path);
  onlyKeys(o, ['state', 'text', 'reply'], path);
  if (!OUTCOMES.includes(o.state as ModelOutcome['state']))
    throw new ScriptShapeError(`${path}.state: must be one of ${OUTCOMES.join(', ')}`);
  const out: ModelOutcome = { state: o.state as ModelOutcome['state'] };
  if (o.text !== undefined) out.text = string(o.text, `${path}.text`);
  if (o.reply !== undefined) {
    if (o.reply !== 'message') throw new ScriptShapeError(`${path}.reply: must be "message" (a direct reply) when present`);
    out.reply = 'message';
  }
  return out;
}

function parseArtifact(value: unknown, path: string): AgentArtifact {
  const a = object(value, path);
  onlyKeys(a, ['artifactId', 'name', 'description', 'parts', 'append', 'lastChunk'], path);
  const parts = array(a.parts, `${path}.parts`).map((p, i) => parseArtifactPart(p, `${path}.parts[${i}]`));
  if (parts.length === 0) throw new ScriptShapeError(`${path}.parts: must hold at least one part`);
  const out: AgentArtifact = { artifactId: nonEmptyString(a.artifactId, `${path}.artifactId`), parts };
  if (a.name !== undefined) out.name = string(a.name, `${path}.name`);
  if (a.description !== undefined) out.description = string(a.description, `${path}.description`);
  for (const flag of ['append', 'lastChunk'] as const) {
    if (a[flag] === undefined) continue;
    if (typeof a[flag] !== 'boolean') throw new ScriptShapeError(`${path}.${flag}: must be a boolean`);
    out[flag] = a[flag];
  }
  return out;
}

function parseArtifactPart(value: unknown, path: string): ArtifactPart {
  const p = object(value, path);
  if (p.text !== undefined) return (onlyKeys(p, ['text'], path), { text: string(p.text, `${path}.text`) });
  if (p.data !== undefined) return (onlyKeys(p, ['data'], path), { data: object(p.data, `${path}.data`) });
  onlyKeys(p, ['file'], path);
  const f = object(p.file, `${path}.file`);
  onlyKeys(f, ['name', 'mediaType', 'bytes', 'uri'], `${path}.file`);
  if ((f.bytes === undefined) === (f.uri === undefined))
    throw new ScriptShapeError(`${path}.file: needs exactly one of "bytes" (base64) or "uri"`);
  const file: Extract<ArtifactPart, { file: unknown }>['file'] = {};
  for (const key of ['name', 'mediaType', 'bytes', 'uri'] as const)
    if (f[key] !== undefined) file[key] = string(f[key], `${path}.file.${key}`);
  return { file };
}

function parsePart(value: unknown, path: string): ModelPart {
  const part = object(value, path);
  onlyKeys(part, ['text', 'thought', 'thoughtSignature', 'functionCall'], path);
  const out: ModelPart = {};
  if (part.text !== undefined) out.text = string(part.text, `${path}.text`);
  if (part.thought !== undefined) {
    if (typeof part.thought !== 'boolean') throw new ScriptShapeError(`${path}.thought: must be a boolean`);
    out.thought = part.thought;
  }
  if (part.thoughtSignature !== undefined) out.thoughtSignature = string(part.thoughtSignature, `${path}.thoughtSignature`);
  if (part.functionCall !== undefined) {
    const call = object(part.functionCall, `${path}.functionCall`);
    onlyKeys(call, ['id', 'name', 'args'], `${path}.functionCall`);
    out.functionCall = { name: nonEmptyString(call.name, `${path}.functionCall.name`) };
    if (call.id !== undefined) out.functionCall.id = nonEmptyString(call.id, `${path}.functionCall.id`);
    if (call.args !== undefined) out.functionCall.args = object(call.args, `${path}.functionCall.args`);
  }
  if (out.text === undefined && out.functionCall === undefined) {
    throw new ScriptShapeError(`${path}: a part needs "text" or "functionCall"`);
  }
  return out;
}

function object(value: unknown, path: string): Obj {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ScriptShapeError(`${path}: must be an object`);
  return value as Obj;
}

function array(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw new ScriptShapeError(`${path}: must be an array`);
  return value;
}

function string(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new ScriptShapeError(`${path}: must be a string`);
  return value;
}

function nonEmptyString(value: unknown, path: string): string {
  if (typeof value !== 'string' || value === '') throw new ScriptShapeError(`${path}: must be a non-empty string`);
  return value;
}

function nonNegative(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ScriptShapeError(`${path}: must be a non-negative number`);
  }
  return value;
}

function onlyKeys(value: Obj, allowed: string[], path: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new ScriptShapeError(`${path ? `${path}.` : ''}${key}: unknown field (expected one of ${allowed.join(', ')})`);
    }
  }
}
