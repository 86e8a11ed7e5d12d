/**
 * Tool-call cards: one ToolCall DataPart (the RFC's proto field names, or the legacy
 * `coderAgent` scheduler object) folded onto the card it updates.
 */
import { isObject } from '../lib/is-object.js';
import type { JsonObject } from './wire.js';

export type ToolCallStatus = 'PENDING' | 'EXECUTING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

export interface FileDiffView {
  /** The file's path (absolute, as the server resolved it), or its name. */
  path?: string;
  /** The unified diff. */
  unified: string;
  oldContent?: string;
  newContent?: string;
}

export interface CardOption {
  /** The id to answer with (`proceed_once`, `cancel`, …). */
  id: string;
  label: string;
  description?: string;
}

/** One tool call as a person sees it. */
export interface ToolCardView {
  /** The tool call id (`tool_call_id`; `callId` in the legacy dialect): what an answer names. */
  id: string;
  toolName: string;
  status: ToolCallStatus;
  /** Each status the card went through, in order (a repeated status is not repeated). */
  history: { status: ToolCallStatus; at?: string }[];
  /** The parsed input parameters. */
  args: JsonObject;
  description?: string;
  /** The proposed edit while it waits, or the edit made. */
  diff?: FileDiffView;
  /** The shell command a confirmation asks about. */
  command?: string;
  /** The output so far while it runs (shell). */
  liveOutput?: string;
  result?: { text?: string; diff?: FileDiffView };
  failureReason?: string;
  /** The options offered; non-empty only while it waits for an answer. */
  options: CardOption[];
  waiting: boolean;
  /** MCP calls: the server and the tool. */
  mcp?: { server: string; tool: string };
  /**
   * The checkpoint taken before the call ran (a server with checkpointing on): `restore` with it
   * puts the call's file back (TaskSession.restore). The RFC dialect names it in the DataPart's
   * metadata, gemini-cli's in `request.checkpoint`.
   */
  checkpoint?: string;
  /** The last ToolCall object received for it, as sent. */
  raw: JsonObject;
}

const STATUSES: ReadonlySet<string> = new Set(['PENDING', 'EXECUTING', 'SUCCEEDED', 'FAILED', 'CANCELLED']);

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function withStatus(prev: ToolCardView | undefined, status: ToolCallStatus, at: string | undefined): ToolCardView['history'] {
  const history = prev?.history ?? [];
  if (history.at(-1)?.status === status) return history;
  return [...history, at !== undefined ? { status, at } : { status }];
}

function fileDiff(value: unknown): FileDiffView | undefined {
  if (!isObject(value)) return undefined;
  const path = str(value.file_path) ?? str(value.file_name);
  return {
    ...(path !== undefined ? { path } : {}),
    unified: str(value.formatted_diff) ?? '',
    ...(str(value.old_content) !== undefined ? { oldContent: str(value.old_content) } : {}),
    // proto3 JSON leaves out an empty new_content
    newContent: str(value.new_content) ?? '',
  };
}

function options(request: JsonObject | undefined): CardOption[] {
  const list = Array.isArray(request?.options) ? request.options : [];
  return list.filter(isObject).map((o) => {
    const id = str(o.id) ?? '';
    const description = str(o.description);
    return { id, label: str(o.name) ?? id, ...(description !== undefined ? { description } : {}) };
  });
}

/** A card updated by a ToolCall in the RFC's proto field names. */
export function rfcCard(
  prev: ToolCardView | undefined,
  call: JsonObject,
  at: string | undefined,
  reasonText?: string,
  partMetadata?: JsonObject,
): ToolCardView {
  const checkpoint = str(partMetadata?.checkpoint) ?? prev?.checkpoint;
  const status = (STATUSES.has(str(call.status) ?? '') ? call.status : 'PENDING') as ToolCallStatus;
  const request = isObject(call.confirmation_request) ? call.confirmation_request : undefined;
  const output = isObject(call.output) ? call.output : undefined;
  const error = isObject(call.error) ? call.error : undefined;
  const waiting = status === 'PENDING' && request !== undefined;
  const proposed = fileDiff(request?.file_edit_details);
  const resultDiff = fileDiff(output?.diff);
  const mcp = isObject(request?.mcp_details) ? request.mcp_details : undefined;
  const execute = isObject(request?.execute_details) ? request.execute_details : undefined;
  const description = str(call.description) ?? prev?.description;
  const diff = resultDiff ?? proposed ?? prev?.diff;
  const command = str(execute?.command) ?? prev?.command;
  const liveOutput = str(call.live_content) ?? prev?.liveOutput;
  const failureReason = str(error?.message) ?? reasonText ?? prev?.failureReason;
  const mcpView = mcp !== undefined ? { server: str(mcp.server_name) ?? '', tool: str(mcp.tool_name) ?? '' } : prev?.mcp;
  return {
    id: str(call.tool_call_id) ?? prev?.id ?? '',
    toolName: str(call.tool_name) ?? prev?.toolName ?? '',
    status,
    history: withStatus(prev, status, at),
    args: isObject(call.input_parameters) ? call.input_parameters : (prev?.args ?? {}),
    ...(description !== undefined ? { description } : {}),
    ...(diff !== undefined ? { diff } : {}),
    ...(command !== undefined ? { command } : {}),
    ...(liveOutput !== undefined ? { liveOutput } : {}),
    ...(output !== undefined ? { result: resultOf(output.text, resultDiff) } : prev?.result ? { result: prev.result } : {}),
    ...(status === 'FAILED' && failureReason !== undefined ? { failureReason } : {}),
    options: waiting ? options(request) : [],
    waiting,
    ...(mcpView !== undefined ? { mcp: mcpView } : {}),
    ...(checkpoint !== undefined ? { checkpoint } : {}),
    raw: call,
  };
}

function resultOf(text: unknown, diff: FileDiffView | undefined): NonNullable<ToolCardView['result']> {
  return { ...(typeof text === 'string' ? { text } : {}), ...(diff !== undefined ? { diff } : {}) };
}

/** The id of the call a ToolCall DataPart describes, in either dialect; undefined when it is none. */
export function toolCallId(data: JsonObject): string | undefined {
  if (typeof data.tool_call_id === 'string') return data.tool_call_id;
  const request = isObject(data.request) ? data.request : undefined;
  return typeof request?.callId === 'string' ? request.callId : undefined;
}

const LEGACY_STATUS: Record<string, ToolCallStatus> = {
  validating: 'PENDING',
  scheduled: 'PENDING',
  awaiting_approval: 'PENDING',
  executing: 'EXECUTING',
  success: 'SUCCEEDED',
  error: 'FAILED',
  cancelled: 'CANCELLED',
};

const LEGACY_OPTIONS: Record<string, CardOption[]> = {
  edit: [
    { id: 'proceed_once', label: 'Allow once' },
    { id: 'proceed_always', label: 'Allow always' },
    { id: 'modify_with_editor', label: 'Modify' },
    { id: 'cancel', label: 'Reject' },
  ],
  exec: [
    { id: 'proceed_once', label: 'Allow once' },
    { id: 'proceed_always', label: 'Allow always' },
    { id: 'cancel', label: 'Reject' },
  ],
  mcp: [
    { id: 'proceed_once', label: 'Allow once' },
    { id: 'proceed_always_tool', label: 'Allow this tool always' },
    { id: 'proceed_always_server', label: 'Allow this server always' },
    { id: 'cancel', label: 'Reject' },
  ],
};

/** The text of a legacy `response.responseParts` (functionResponse output), or of its resultDisplay. */
function legacyResult(response: JsonObject | undefined): string | undefined {
  if (response === undefined) return undefined;
  if (typeof response.resultDisplay === 'string') return response.resultDisplay;
  const parts = Array.isArray(response.responseParts) ? response.responseParts : [];
  for (const part of parts) {
    const output =
      isObject(part) && isObject(part.functionResponse) && isObject(part.functionResponse.response)
        ? part.functionResponse.response
        : undefined;
    if (typeof output?.output === 'string') return output.output;
  }
  return undefined;
}

function legacyDiff(details: JsonObject | undefined): FileDiffView | undefined {
  if (details?.type !== 'edit') return undefined;
  const path = str(details.filePath) ?? str(details.fileName);
  const oldContent = str(details.originalContent);
  return {
    ...(path !== undefined ? { path } : {}),
    unified: str(details.fileDiff) ?? '',
    ...(oldContent !== undefined ? { oldContent } : {}),
    newContent: str(details.newContent) ?? '',
  };
}

/** A card updated by a legacy (`coderAgent`) scheduler object. */
export function legacyCard(prev: ToolCardView | undefined, call: JsonObject, at: string | undefined): ToolCardView {
  const request = isObject(call.request) ? call.request : {};
  const tool = isObject(call.tool) ? call.tool : {};
  const details = isObject(call.confirmationDetails) ? call.confirmationDetails : undefined;
  const response = isObject(call.response) ? call.response : undefined;
  const status = LEGACY_STATUS[str(call.status) ?? ''] ?? 'PENDING';
  const waiting = call.status === 'awaiting_approval';
  const diff = legacyDiff(details) ?? prev?.diff;
  const text = legacyResult(response);
  const error = isObject(response?.error) ? str(response.error.message) : undefined;
  const failureReason = error ?? (status === 'FAILED' ? text : undefined) ?? prev?.failureReason;
  const command = str(details?.command) ?? prev?.command;
  const description = str(tool.description) ?? prev?.description;
  const mcp = details?.type === 'mcp' ? { server: str(details.serverName) ?? '', tool: str(details.toolName) ?? '' } : prev?.mcp;
  const checkpoint = str(request.checkpoint) ?? prev?.checkpoint;
  return {
    id: str(request.callId) ?? prev?.id ?? '',
    toolName: str(request.name) ?? prev?.toolName ?? '',
    status,
    history: withStatus(prev, status, at),
    args: isObject(request.args) ? request.args : (prev?.args ?? {}),
    ...(description !== undefined ? { description } : {}),
    ...(diff !== undefined ? { diff } : {}),
    ...(command !== undefined ? { command } : {}),
    ...(prev?.liveOutput !== undefined ? { liveOutput: prev.liveOutput } : {}),
    ...(status === 'SUCCEEDED' && text !== undefined ? { result: { text } } : prev?.result ? { result: prev.result } : {}),
    ...(status === 'FAILED' && failureReason !== undefined ? { failureReason } : {}),
    options: waiting ? (LEGACY_OPTIONS[str(details?.type) ?? ''] ?? LEGACY_OPTIONS.exec ?? []) : [],
    waiting,
    ...(mcp !== undefined ? { mcp } : {}),
    ...(checkpoint !== undefined ? { checkpoint } : {}),
    raw: call,
  };
}
