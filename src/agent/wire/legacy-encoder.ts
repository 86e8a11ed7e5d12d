/**
 * The legacy dialect: the `coderAgent` wire of gemini-cli's own A2A server
 * (@google/gemini-cli-a2a-server 0.25.2), for clients built against it. Every status update
 * carries `metadata: { coderAgent: { kind }, model }`; a tool call rides in a DataPart as
 * gemini-cli's scheduler object (`{ request, status, confirmationDetails?, response?, tool }`);
 * shell output goes out as `artifact-update` events with artifact id `tool-<callId>-output`.
 *
 * Turn semantics those clients depend on: a finished turn is `input-required` (`final: true`)
 * on the wire, and the conversation goes on in the same task; the task itself is `completed`
 * inside this server (so nothing waits on it), shown as `input-required` by `taskView`.
 * The shapes were recorded from the original server (test/fixtures/legacy/).
 *
 * The original's sequences: a turn's steps are `state-change: working` (the model's calls are
 * judged; the model runs again with their results), a call's steps are the ToolCall statuses
 * `validating` (before its card or its run) and `scheduled` (approved, about to run); every
 * update other than a state-change repeats the state the last state-change showed (after an
 * answer, `input-required` until the model runs again). A call that fails before it can run
 * (unknown tool, invalid arguments) shows only its `error`, as the original's scheduler does.
 */
import type { Part, Task, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { agentMessage, dataPart, statusUpdate, STATE_TO_V1, textPart } from '../../protocol/a2a.js';
import type { JsonObject } from '../../protocol/a2a.js';
import type { FileChange, ToolDisplay, ToolProposal } from '../../tools/tool.js';
import { PAUSE_OR_TERMINAL } from './agent-events.js';
import type { AgentEvent, TaskStateName, TokenUsage, ToolCallSnapshot } from './agent-events.js';
import { latestWaitingParts } from './wire-encoder.js';
import type { EncodeContext, EncodedEvent, WireEncoder } from './wire-encoder.js';
import { artifactEvent } from './artifacts.js';

/** The `coderAgent.kind` of a status update's metadata. */
export type CoderAgentKind = 'state-change' | 'tool-call-update' | 'tool-call-confirmation' | 'text-content' | 'thought';

/** gemini-cli's scheduler statuses. */
export type LegacyToolStatus = 'validating' | 'awaiting_approval' | 'scheduled' | 'executing' | 'success' | 'error' | 'cancelled';

/** What the encoder knows of a tool beyond the call (its declaration); MCP tools may be unknown. */
export interface LegacyToolInfo {
  description: string;
  kind: string;
  parameters: JsonObject;
}

/** gemini-cli's names for the built-in tools (Kind and display name as that server shows them). */
const GEMINI_TOOLS: Readonly<Record<string, { displayName: string; kind: string }>> = {
  read_file: { displayName: 'ReadFile', kind: 'read' },
  read_many_files: { displayName: 'ReadManyFiles', kind: 'read' },
  list_directory: { displayName: 'ReadFolder', kind: 'search' },
  glob: { displayName: 'FindFiles', kind: 'search' },
  search_file_content: { displayName: 'SearchText', kind: 'search' },
  write_file: { displayName: 'WriteFile', kind: 'edit' },
  replace: { displayName: 'Edit', kind: 'edit' },
  run_shell_command: { displayName: 'Shell', kind: 'execute' },
};

const STATUS: Readonly<Record<Exclude<ToolCallSnapshot['status'], 'PENDING'>, LegacyToolStatus>> = {
  EXECUTING: 'executing',
  SUCCEEDED: 'success',
  FAILED: 'error',
  CANCELLED: 'cancelled',
};

/** The legacy ToolCall status of a snapshot: a PENDING call either waits for a person or is about to run. */
export function legacyStatus(call: ToolCallSnapshot): LegacyToolStatus {
  if (call.status === 'PENDING') return call.confirmation !== undefined ? 'awaiting_approval' : 'scheduled';
  return STATUS[call.status];
}

export const artifactIdOf = (callId: string): string => `tool-${callId}-output`;

function editDetails(title: string, c: FileChange): JsonObject {
  return {
    type: 'edit',
    title,
    fileName: c.fileName,
    filePath: c.filePath,
    fileDiff: c.formattedDiff,
    originalContent: c.oldContent ?? '',
    newContent: c.newContent,
  };
}

/** confirmationDetails as gemini-cli's tools build them (titles included). */
function confirmationDetails(toolName: string, p: ToolProposal): JsonObject {
  switch (p.type) {
    case 'edit':
      return editDetails(`Confirm ${toolName === 'write_file' ? 'Write' : 'Edit'}: ${p.change.fileName}`, p.change);
    case 'execute': {
      const roots = p.command
        .split(/&&|\|\||;|\|/)
        .map((s) => s.trim().split(/\s+/)[0] ?? '')
        .filter((s) => s !== '');
      return { type: 'exec', title: 'Confirm Shell Command', command: p.command, rootCommand: [...new Set(roots)].join(', ') };
    }
    case 'mcp':
      return {
        type: 'mcp',
        title: 'Confirm MCP Tool Execution',
        serverName: p.serverName,
        toolName: p.toolName,
        toolDisplayName: p.toolName,
      };
    case 'generic':
      return { type: 'info', title: `Confirm ${toolName}`, prompt: p.description };
  }
}

function resultDisplay(d: ToolDisplay): unknown {
  switch (d.type) {
    case 'text':
      return d.text;
    case 'diff':
      return {
        fileDiff: d.change.formattedDiff,
        fileName: d.change.fileName,
        filePath: d.change.filePath,
        originalContent: d.change.oldContent ?? '',
        newContent: d.change.newContent,
        isNewFile: d.change.oldContent === undefined,
      };
    case 'structured':
      return JSON.stringify(d.data);
  }
}

/** The scheduler's `response` of a finished call: what the model was told, and what the user sees. */
function response(call: ToolCallSnapshot): JsonObject | undefined {
  const fr = (r: JsonObject) => [{ functionResponse: { id: call.id, name: call.toolName, response: r } }];
  if (call.status === 'SUCCEEDED') {
    const display = call.output !== undefined ? resultDisplay(call.output) : '';
    const output = typeof display === 'string' ? display : `${call.toolName} succeeded`;
    return { callId: call.id, responseParts: fr({ output }), resultDisplay: display, contentLength: output.length };
  }
  if (call.status === 'CANCELLED') {
    const error = `[Operation Cancelled] Reason: ${call.error?.message ?? 'User cancelled the operation.'}`;
    return { callId: call.id, responseParts: fr({ error }), contentLength: error.length };
  }
  if (call.status === 'FAILED') {
    const message = call.error?.message ?? 'Tool call failed';
    return {
      callId: call.id,
      responseParts: fr({ error: message }),
      resultDisplay: message,
      error: { message },
      errorType: call.error?.type ?? 'unhandled_exception',
      contentLength: message.length,
    };
  }
  return undefined;
}

export class LegacyEncoder implements WireEncoder {
  readonly dialect = 'legacy' as const;

  /** `toolInfo` names a tool's declaration (built-in tools); unknown tools get a minimal `tool`. */
  constructor(private readonly toolInfo: (name: string) => LegacyToolInfo | undefined = () => undefined) {}

  private meta(kind: CoderAgentKind, ctx: EncodeContext, error?: string, usage?: TokenUsage): JsonObject {
    return {
      coderAgent: { kind },
      model: ctx.model,
      ...(error !== undefined ? { error } : {}),
      ...(usage !== undefined ? { usageMetadata: { ...usage } } : {}),
    };
  }

  /** The ToolCall DataPart object (gemini-cli's serialisable ToolCall); `status` overrides the snapshot's (a call's step). */
  toolCall(call: ToolCallSnapshot, ctx: EncodeContext, status: LegacyToolStatus = legacyStatus(call)): JsonObject {
    const info = this.toolInfo(call.toolName);
    const known = GEMINI_TOOLS[call.toolName];
    const json: JsonObject = {
      request: {
        callId: call.id,
        name: call.toolName,
        args: call.input,
        isClientInitiated: false,
        prompt_id: ctx.taskId,
        ...(call.checkpoint !== undefined ? { checkpoint: call.checkpoint } : {}),
      },
      status,
    };
    if (call.confirmation !== undefined) json.confirmationDetails = confirmationDetails(call.toolName, call.confirmation.proposal);
    const res = response(call);
    if (res !== undefined) json.response = res;
    if (call.liveContent !== undefined && call.status === 'EXECUTING') json.liveOutput = call.liveContent;
    json.tool = {
      name: call.toolName,
      displayName: known?.displayName ?? call.toolName,
      description: info?.description ?? call.description ?? call.toolName,
      kind: known?.kind ?? info?.kind ?? 'other',
      isOutputMarkdown: call.toolName !== 'run_shell_command',
      canUpdateOutput: call.toolName === 'run_shell_command',
      ...(info ? { schema: { name: call.toolName, description: info.description, parametersJsonSchema: info.parameters } } : {}),
      ...(info ? { parameterSchema: info.parameters } : {}),
    };
    return json;
  }

  toolCallIdOf(update: TaskStatusUpdateEvent): string | undefined {
    const kind = (update.metadata?.coderAgent as { kind?: string } | undefined)?.kind;
    if (kind !== 'tool-call-update' && kind !== 'tool-call-confirmation') return undefined;
    const content = update.status?.message?.parts[0]?.content;
    const request = content?.$case === 'data' ? (content.value as { request?: { callId?: unknown } }).request : undefined;
    return typeof request?.callId === 'string' ? request.callId : undefined;
  }

  waitingCallParts(updates: Iterable<TaskStatusUpdateEvent>): Part[] {
    return latestWaitingParts(
      updates,
      (u) => this.toolCallIdOf(u),
      (call) => call.status === 'awaiting_approval',
    );
  }

  /** A finished turn (`completed` here) is `input-required` to these clients: the conversation goes on in the task. */
  wireState(state: TaskStateName): TaskStateName {
    return state === 'completed' ? 'input-required' : state;
  }

  taskView(task: Task): Task {
    if (task.status?.state !== STATE_TO_V1.completed) return task;
    return { ...task, status: { ...task.status, state: STATE_TO_V1['input-required'] } };
  }

  encode(event: AgentEvent, ctx: EncodeContext): EncodedEvent | undefined {
    const { taskId, contextId } = ctx;
    // Every update but a state-change repeats the state the client was last shown.
    const shown = STATE_TO_V1[this.wireState(ctx.shownState ?? 'working')];
    const update = (kind: CoderAgentKind, parts: Part[]) =>
      statusUpdate(taskId, contextId, shown, agentMessage(taskId, contextId, parts), this.meta(kind, ctx));
    switch (event.type) {
      case 'state': {
        const msg = event.text !== undefined ? agentMessage(taskId, contextId, [textPart(event.text)]) : undefined;
        const state = STATE_TO_V1[this.wireState(event.state)];
        const usage = PAUSE_OR_TERMINAL.has(event.state) ? event.usage : undefined;
        const meta = this.meta('state-change', ctx, event.error, usage);
        return { $case: 'statusUpdate', value: statusUpdate(taskId, contextId, state, msg, meta) };
      }
      case 'turn-step':
        return {
          $case: 'statusUpdate',
          value: statusUpdate(taskId, contextId, STATE_TO_V1.working, undefined, this.meta('state-change', ctx)),
        };
      case 'call-step':
        return { $case: 'statusUpdate', value: update('tool-call-update', [dataPart(this.toolCall(event.call, ctx, event.step))]) };
      case 'tool-call': {
        const call = event.call;
        // A call that cannot run (unknown tool, invalid arguments) shows only its error.
        if ((call.status === 'PENDING' || call.status === 'EXECUTING') && call.error !== undefined) return undefined;
        if (call.status === 'EXECUTING' && call.liveContent !== undefined) {
          // Live output: the whole text so far, as that server sends it.
          const artifact = {
            artifactId: artifactIdOf(call.id),
            name: '',
            description: '',
            parts: [textPart(call.liveContent)],
            metadata: undefined,
            extensions: [],
          };
          return { $case: 'artifactUpdate', value: { taskId, contextId, artifact, append: true, lastChunk: false, metadata: undefined } };
        }
        const kind = legacyStatus(call) === 'awaiting_approval' ? 'tool-call-confirmation' : 'tool-call-update';
        return { $case: 'statusUpdate', value: update(kind, [dataPart(this.toolCall(call, ctx))]) };
      }
      case 'text':
        return { $case: 'statusUpdate', value: update('text-content', [textPart(event.delta)]) };
      case 'thought':
        return { $case: 'statusUpdate', value: update('thought', [dataPart({ subject: event.subject, description: event.description })]) };
      case 'artifact':
        return artifactEvent(event.artifact, ctx);
    }
  }
}
