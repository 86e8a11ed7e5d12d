/**
 * The development-tool extension schema (proto/development_tool.proto, RFC §3.2/§3.3)
 * at runtime. This is the only module of the repo that imports protobufjs.
 *
 * Outbound messages are checked field by field, built with `Type.fromObject`,
 * encoded, decoded and returned in their proto3 JSON form (snake_case proto
 * field names, enum names, Struct fields as plain JSON, unset fields omitted).
 * Inbound client JSON is validated by hand, because `fromObject` is lenient.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { checkMessageJson, copyProtoJson, fieldPath, isPlainObject, readFields } from './json-fields.js';
import type { FieldRead, ParseResult } from './json-fields.js';
import { structWrapper } from './struct-json.js';

export type { ParseResult } from './json-fields.js';

/** Names of ToolCallStatus the server may emit. */
export type ToolCallStatusName = 'PENDING' | 'EXECUTING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
/** Names of DevelopmentToolEvent.DevelopmentToolEventKind the server may emit. */
export type DevtoolEventKind = 'TOOL_CALL_CONFIRMATION' | 'TOOL_CALL_UPDATE' | 'TEXT_CONTENT' | 'STATE_CHANGE' | 'THOUGHT';
/** Names of CommandExecutionStatus the server may emit. */
export type CommandExecutionStatusName = 'STARTED' | 'FAILED_TO_START' | 'AWAITING_SHELL_CONFIRMATION' | 'AWAITING_ACTION_CONFIRMATION';

/** FileDiff in JSON form. Note: proto3 JSON omits `new_content` when it is "". */
export type FileDiffJson = {
  file_name: string;
  file_path: string;
  old_content?: string;
  new_content: string;
  formatted_diff?: string;
};
/** ConfirmationRequest in JSON form; set at most one of the four details. */
export type ConfirmationRequestJson = {
  options: { id: string; name: string; description?: string }[];
  execute_details?: { command: string; working_directory?: string };
  file_edit_details?: FileDiffJson;
  mcp_details?: { server_name: string; tool_name: string };
  generic_details?: { description: string };
};
/** ToolCall in JSON form; `output` and `error` are a oneof, as are the members of `output`. */
export type ToolCallJson = {
  tool_call_id: string;
  status: ToolCallStatusName;
  tool_name: string;
  description?: string;
  input_parameters?: Record<string, unknown>;
  live_content?: string;
  output?: { text?: string; diff?: FileDiffJson; structured_data?: Record<string, unknown> };
  error?: { message: string; type?: string; status_code?: number };
  confirmation_request?: ConfirmationRequestJson;
};
/** A client's ToolCallConfirmation, normalised and flattened by {@link DevtoolSchema.parseToolCallConfirmation}. */
export type ToolCallConfirmationJson = {
  tool_call_id: string;
  selected_option_id: string;
  /** Present when the client modified the proposed file content. */
  new_content?: string;
  /** The user's note on the answer, for the model (an extension field); absent when not given or empty. */
  feedback?: string;
};
export type AgentThoughtJson = {
  subject: string;
  description: string;
};
export type DevelopmentToolEventJson = {
  kind: DevtoolEventKind;
  model: string;
  user_tier?: string;
  error?: string;
};
export type SlashCommandArgumentJson = {
  name: string;
  description?: string;
  is_required?: boolean;
};
export type SlashCommandJson = {
  name: string;
  description?: string;
  arguments?: SlashCommandArgumentJson[];
  sub_commands?: SlashCommandJson[];
};
/** GetAllSlashCommandsResponse; proto3 JSON omits an empty `commands` list (`{}`). */
export type GetAllSlashCommandsResponseJson = {
  commands: SlashCommandJson[];
};
export type ExecuteSlashCommandResponseJson = {
  /** Absent when the command failed to start (no task was created). */
  execution_id?: string;
  status: CommandExecutionStatusName;
  message?: string;
};
export type ExecuteSlashCommandRequestJson = {
  command_path: string[];
  args: string;
  /** Extension: the conversation to run the command in (absent = a new one). */
  context_id?: string;
};
/** Extension enum ApprovalMode (AgentSettings.approval_mode). */
export type ApprovalModeName = 'DEFAULT' | 'AUTO_EDIT' | 'YOLO';
/** Extension message McpServerConfig; `http_url` is folded into `url` by the parser. */
export type McpServerConfigJson = {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  timeout?: number;
};
export type AgentSettingsJson = {
  workspace_path?: string;
  /** Absent when the client did not set it. */
  approval_mode?: ApprovalModeName;
  allowed_tools?: string[];
  mcp_servers?: Record<string, McpServerConfigJson>;
};

/** The loaded schema. Builders throw Error naming the field on input the schema does not allow. */
export interface DevtoolSchema {
  /**
   * Verifies `obj` (unknown field, wrong type, bad enum name, two oneof members, missing
   * tool_call_id/tool_name/status all throw), builds a ToolCall and returns its proto3 JSON.
   */
  toolCall(obj: ToolCallJson): ToolCallJson;
  /** Builds an AgentThought and returns its proto3 JSON (an empty string field is omitted). */
  agentThought(o: AgentThoughtJson): AgentThoughtJson;
  /** Builds a DevelopmentToolEvent (kind required) and returns its proto3 JSON; empty model/user_tier/error are omitted. */
  developmentToolEvent(o: DevelopmentToolEventJson): DevelopmentToolEventJson;
  /** Builds a GetAllSlashCommandsResponse and returns its proto3 JSON (empty strings/lists and false omitted). */
  getAllSlashCommandsResponse(o: GetAllSlashCommandsResponseJson): GetAllSlashCommandsResponseJson;
  /** Builds an ExecuteSlashCommandResponse (status required; execution_id unless FAILED_TO_START); returns proto3 JSON, an empty message omitted. */
  executeSlashCommandResponse(o: ExecuteSlashCommandResponseJson): ExecuteSlashCommandResponseJson;
  /**
   * Strictly parses a client's ToolCallConfirmation (snake_case or lowerCamelCase keys at every level).
   * Requires non-empty tool_call_id and selected_option_id. Modified content may come as
   * `file_details: {new_content}` (proto3 JSON of the oneof) or `modified_details: {file_details: {new_content}}`,
   * not both; new_content must then be present and a string. `feedback`, when present, must be a string
   * ("" counts as absent; its length and characters are the resume handler's check). Errors name the field
   * as `<path>.<key>`.
   */
  parseToolCallConfirmation(data: unknown, path: string): ParseResult<ToolCallConfirmationJson>;
  /**
   * Strictly parses AgentSettings; workspace_path, if given, must be a string ("" counts as unset). No filesystem
   * check. approval_mode is an ApprovalMode name (any case); mcp_servers values are McpServerConfig with field types
   * checked (which fields go together is checked by the MCP layer); `http_url` is returned as `url`.
   */
  parseAgentSettings(data: unknown, path: string): ParseResult<AgentSettingsJson>;
  /** Strictly parses ExecuteSlashCommandRequest: command_path a non-empty array of non-empty strings, args a string (default ""). */
  parseExecuteSlashCommandRequest(data: unknown, path: string): ParseResult<ExecuteSlashCommandRequestJson>;
  /** True when `data` is an object with an own tool_call_id, toolCallId, selected_option_id or selectedOptionId key. */
  looksLikeToolCallConfirmation(data: unknown): boolean;
}

const PACKAGE = 'development_tool.v0';
const DEFAULT_PROTO = fileURLToPath(new URL('../../proto/development_tool.proto', import.meta.url));
const TO_JSON: protobuf.IConversionOptions = { enums: String, longs: String, defaults: false, oneofs: false };
const CONFIRMATION_KEYS = ['tool_call_id', 'toolCallId', 'selected_option_id', 'selectedOptionId'];
/** Field lists the hand-written parsers implement; checked against the proto at load time. */
const INBOUND_FIELDS = {
  ToolCallConfirmation: ['tool_call_id', 'selected_option_id', 'file_details', 'feedback'],
  ModifiedFileDetails: ['new_content'],
  AgentSettings: ['workspace_path', 'approval_mode', 'allowed_tools', 'mcp_servers'],
  McpServerConfig: ['command', 'args', 'env', 'cwd', 'url', 'http_url', 'headers', 'timeout'],
  ExecuteSlashCommandRequest: ['command_path', 'args', 'context_id'],
} satisfies Record<string, string[]>;
const APPROVAL_MODES: readonly ApprovalModeName[] = ['DEFAULT', 'AUTO_EDIT', 'YOLO'];
const cache = new Map<string, DevtoolSchema>();

// Must be registered before any Struct type is set up (protobufjs reads wrappers in Type#setup).
protobuf.wrappers['.google.protobuf.Struct'] = structWrapper as unknown as protobuf.IWrapper;

const fail = (message: string): { ok: false; message: string } => ({ ok: false, message });

function stringField(f: FieldRead | undefined, name: string, path: string, nonEmpty: boolean): string | { error: string } {
  const what = nonEmpty ? 'a non-empty string' : 'a string';
  if (f === undefined) return { error: `${fieldPath(path, name)} must be ${what}` };
  if (typeof f.value !== 'string' || (nonEmpty && f.value === '')) return { error: `${f.path} must be ${what}` };
  return f.value;
}

function parseModifiedFile(f: FieldRead): string | { error: string } {
  const r = readFields(f.value, f.path, 'ModifiedFileDetails', INBOUND_FIELDS.ModifiedFileDetails);
  if (!r.ok) return { error: r.message };
  return stringField(r.value.get('new_content'), 'new_content', f.path, false);
}

function parseToolCallConfirmation(data: unknown, path: string): ParseResult<ToolCallConfirmationJson> {
  const fields = INBOUND_FIELDS.ToolCallConfirmation;
  const r = readFields(data, path, 'ToolCallConfirmation', [...fields, 'modified_details'], fields);
  if (!r.ok) return r;
  const id = stringField(r.value.get('tool_call_id'), 'tool_call_id', path, true);
  if (typeof id !== 'string') return fail(id.error);
  const option = stringField(r.value.get('selected_option_id'), 'selected_option_id', path, true);
  if (typeof option !== 'string') return fail(option.error);
  const value: ToolCallConfirmationJson = { tool_call_id: id, selected_option_id: option };
  const flat = r.value.get('file_details');
  const nested = r.value.get('modified_details');
  if (flat && nested) return fail(`${path} sets both ${flat.key} and ${nested.key}; use one form of the modified_details oneof`);
  let file = flat;
  if (nested) {
    const m = readFields(nested.value, nested.path, 'modified_details', ['file_details']);
    if (!m.ok) return m;
    file = m.value.get('file_details');
    if (!file) return fail(`${nested.path} must set file_details`);
  }
  if (file) {
    const content = parseModifiedFile(file);
    if (typeof content !== 'string') return fail(content.error);
    value.new_content = content;
  }
  const feedback = r.value.get('feedback');
  if (feedback) {
    if (typeof feedback.value !== 'string') return fail(`${feedback.path} must be a string`);
    if (feedback.value !== '') value.feedback = feedback.value;
  }
  return { ok: true, value };
}

function stringList(f: FieldRead): string[] | { error: string } {
  if (!Array.isArray(f.value)) return { error: `${f.path} must be an array of strings` };
  const bad = f.value.findIndex((v) => typeof v !== 'string');
  return bad >= 0 ? { error: `${f.path}[${bad}] must be a string` } : [...(f.value as string[])];
}

function stringMap(f: FieldRead): ParseResult<Record<string, string>> {
  if (!isPlainObject(f.value)) return fail(`${f.path} must be a JSON object of strings`);
  for (const [k, v] of Object.entries(f.value)) if (typeof v !== 'string') return fail(`${fieldPath(f.path, k)} must be a string`);
  return { ok: true, value: { ...(f.value as Record<string, string>) } };
}

/** One McpServerConfig: field types only (which fields make sense together is the MCP layer's check). */
function parseMcpServer(data: unknown, path: string): ParseResult<McpServerConfigJson> {
  const r = readFields(data, path, 'McpServerConfig', INBOUND_FIELDS.McpServerConfig);
  if (!r.ok) return r;
  const out: McpServerConfigJson = {};
  for (const name of ['command', 'cwd', 'url', 'http_url'] as const) {
    const f = r.value.get(name);
    if (f === undefined) continue;
    const v = stringField(f, name, path, true);
    if (typeof v !== 'string') return fail(v.error);
    if (name === 'http_url') {
      if (out.url !== undefined) return fail(`${path} sets both url and ${f.key}; use one`);
      out.url = v;
    } else if (name === 'url' && out.url !== undefined) return fail(`${path} sets both url and http_url; use one`);
    else out[name] = v;
  }
  const args = r.value.get('args');
  if (args) {
    const v = stringList(args);
    if (!Array.isArray(v)) return fail(v.error);
    out.args = v;
  }
  for (const name of ['env', 'headers'] as const) {
    const f = r.value.get(name);
    if (f === undefined) continue;
    const v = stringMap(f);
    if (!v.ok) return v;
    out[name] = v.value;
  }
  const timeout = r.value.get('timeout');
  if (timeout) {
    if (!Number.isInteger(timeout.value) || (timeout.value as number) < 1 || (timeout.value as number) > 2147483647) {
      return fail(`${timeout.path} must be a positive integer (milliseconds)`);
    }
    out.timeout = timeout.value as number;
  }
  return { ok: true, value: out };
}

function parseAgentSettings(data: unknown, path: string): ParseResult<AgentSettingsJson> {
  const r = readFields(data, path, 'AgentSettings', INBOUND_FIELDS.AgentSettings);
  if (!r.ok) return r;
  const value: AgentSettingsJson = {};
  const f = r.value.get('workspace_path');
  if (f !== undefined) {
    const ws = stringField(f, 'workspace_path', path, false);
    if (typeof ws !== 'string') return fail(ws.error);
    if (ws !== '') value.workspace_path = ws;
  }
  const mode = r.value.get('approval_mode');
  if (mode !== undefined) {
    const name = typeof mode.value === 'string' ? mode.value.toUpperCase() : undefined;
    if (name === 'APPROVAL_MODE_UNSPECIFIED') {
      // proto3 default: same as not setting it
    } else if (name === undefined || !APPROVAL_MODES.includes(name as ApprovalModeName)) {
      return fail(`${mode.path} must be one of ${APPROVAL_MODES.join(', ')} (lowercase accepted), got ${JSON.stringify(mode.value)}`);
    } else value.approval_mode = name as ApprovalModeName;
  }
  const allowed = r.value.get('allowed_tools');
  if (allowed !== undefined) {
    const list = stringList(allowed);
    if (!Array.isArray(list)) return fail(list.error);
    const empty = list.findIndex((s) => s.trim() === '');
    if (empty >= 0) return fail(`${allowed.path}[${empty}] must be a non-empty tool name or "run_shell_command(<command prefix>)"`);
    value.allowed_tools = list.map((s) => s.trim());
  }
  const servers = r.value.get('mcp_servers');
  if (servers !== undefined) {
    if (!isPlainObject(servers.value)) return fail(`${servers.path} must be a JSON object mapping server names to McpServerConfig`);
    value.mcp_servers = {};
    for (const [name, cfg] of Object.entries(servers.value)) {
      const parsed = parseMcpServer(cfg, fieldPath(servers.path, name));
      if (!parsed.ok) return parsed;
      value.mcp_servers[name] = parsed.value;
    }
  }
  return { ok: true, value };
}

function parseExecuteSlashCommandRequest(data: unknown, path: string): ParseResult<ExecuteSlashCommandRequestJson> {
  const r = readFields(data, path, 'ExecuteSlashCommandRequest', INBOUND_FIELDS.ExecuteSlashCommandRequest);
  if (!r.ok) return r;
  const cp = r.value.get('command_path');
  const cpPath = cp?.path ?? fieldPath(path, 'command_path');
  if (!cp || !Array.isArray(cp.value) || cp.value.length === 0) return fail(`${cpPath} must be a non-empty array of strings`);
  const bad = cp.value.findIndex((s) => typeof s !== 'string' || s === '');
  if (bad >= 0) return fail(`${cpPath}[${bad}] must be a non-empty string`);
  const argsField = r.value.get('args');
  const args = argsField === undefined ? '' : stringField(argsField, 'args', path, false);
  if (typeof args !== 'string') return fail(args.error);
  const value: ExecuteSlashCommandRequestJson = { command_path: [...(cp.value as string[])], args };
  const ctxField = r.value.get('context_id');
  if (ctxField !== undefined) {
    const id = stringField(ctxField, 'context_id', path, false);
    if (typeof id !== 'string') return fail(id.error);
    if (id !== '') value.context_id = id;
  }
  return { ok: true, value };
}

function lookupType(root: protobuf.Root, name: string, file: string): protobuf.Type {
  try {
    return root.lookupType(`${PACKAGE}.${name}`);
  } catch {
    throw new Error(`development-tool schema: ${file} does not define message ${PACKAGE}.${name}`);
  }
}

/**
 * The proto3 JSON form of `o` after a round trip through the wire format (fromObject, encode,
 * decode, toObject). The builders take copyProtoJson's copy instead, which is the same (a
 * property test holds them to it) at a fraction of the cost; this is what the copy leaves to the wire.
 */
export function wireProtoJson(type: protobuf.Type, o: Record<string, unknown>): Record<string, unknown> {
  return type.toObject(type.decode(type.encode(type.fromObject(o)).finish()), TO_JSON);
}

/**
 * Returns a function that verifies a JSON object against `type` (plus: each of `required` must be set
 * to a non-default value, so the emitted JSON carries it) and returns its proto3 JSON form, as a
 * round trip through the wire format gives it (wireProtoJson; copyProtoJson where it can).
 */
function builder<T>(type: protobuf.Type, required: string[] = []): (o: T) => T {
  return (o: T) => {
    let err = checkMessageJson(type, o, type.name);
    for (const name of required) {
      if (err) break;
      const v = (o as Record<string, unknown>)[name];
      const rt = type.fields[name]?.resolvedType;
      if (v === undefined || v === '' || (rt instanceof protobuf.Enum && rt.values[v as string] === 0)) {
        err = `${type.name}.${name} is required (got ${JSON.stringify(v)})`;
      }
    }
    if (err) throw new Error(`development-tool schema: ${err}`);
    const json = o as Record<string, unknown>;
    return (copyProtoJson(type, json) ?? wireProtoJson(type, json)) as T;
  };
}

/**
 * Loads proto/development_tool.proto (or `protoFile`) with protobufjs, synchronously, and returns the
 * schema API. Results are cached per resolved path, so repeated calls are cheap.
 * Throws Error("development-tool schema: ...") when the file is missing, does not parse, lacks a
 * message, or its inbound messages do not have exactly the fields the parsers implement.
 */
export function loadDevtoolSchema(protoFile: string = DEFAULT_PROTO): DevtoolSchema {
  const file = resolve(protoFile);
  const cached = cache.get(file);
  if (cached) return cached;
  if (!existsSync(file)) throw new Error(`development-tool schema: proto file not found: ${file}`);
  let root: protobuf.Root;
  try {
    root = new protobuf.Root().loadSync(file, { keepCase: true });
    root.resolveAll();
  } catch (e) {
    throw new Error(`development-tool schema: cannot load ${file}: ${(e as Error).message}`, { cause: e });
  }
  for (const [name, expected] of Object.entries(INBOUND_FIELDS)) {
    const actual = lookupType(root, name, file).fieldsArray.map((f) => f.name);
    if (actual.join() !== expected.join()) {
      throw new Error(
        `development-tool schema: ${PACKAGE}.${name} has fields ${actual.join(', ')}; the parsers expect ${expected.join(', ')}`,
      );
    }
  }
  const t = (name: string) => lookupType(root, name, file);
  const executeResponse = builder<ExecuteSlashCommandResponseJson>(t('ExecuteSlashCommandResponse'), ['status']);
  const schema: DevtoolSchema = {
    toolCall: builder<ToolCallJson>(t('ToolCall'), ['tool_call_id', 'status', 'tool_name']),
    agentThought: builder<AgentThoughtJson>(t('AgentThought')),
    developmentToolEvent: builder<DevelopmentToolEventJson>(t('DevelopmentToolEvent'), ['kind']),
    getAllSlashCommandsResponse: builder<GetAllSlashCommandsResponseJson>(t('GetAllSlashCommandsResponse')),
    executeSlashCommandResponse: (o) => {
      if (o.status !== 'FAILED_TO_START' && !o.execution_id) {
        throw new Error(`development-tool schema: ExecuteSlashCommandResponse.execution_id is required when status is ${o.status}`);
      }
      return executeResponse(o);
    },
    parseToolCallConfirmation,
    parseAgentSettings,
    parseExecuteSlashCommandRequest,
    looksLikeToolCallConfirmation: (data) => isPlainObject(data) && CONFIRMATION_KEYS.some((k) => Object.hasOwn(data, k)),
  };
  cache.set(file, schema);
  return schema;
}
