/**
 * The development-tool RFC dialect (RFC §3.2, Appendix A): every update is a
 * TaskStatusUpdateEvent whose metadata, keyed by the extension URI, holds a
 * DevelopmentToolEvent; ToolCalls and AgentThoughts ride in DataParts, built
 * through the proto schema so nothing off-schema reaches a client.
 */
import { agentMessage, dataPart, statusUpdate, STATE_TO_V1, textPart } from '../../protocol/a2a.js';
import type { JsonObject } from '../../protocol/a2a.js';
import type { DevtoolEventKind, DevtoolSchema, FileDiffJson, ToolCallJson } from '../../protocol/devtool-schema.js';
import { DEVTOOL_EXTENSION_URI } from '../../protocol/extension.js';
import type { FileChange, ToolDisplay, ToolProposal } from '../../tools/tool.js';
import type { AgentEvent, ToolCallSnapshot } from './agent-events.js';
import { artifactEvent } from './artifacts.js';
import { latestWaitingParts } from './wire-encoder.js';
import type { EncodeContext, EncodedEvent, WireEncoder } from './wire-encoder.js';
import type { Part, Task, TaskStatusUpdateEvent } from '@a2a-js/sdk';

function fileDiff(change: FileChange): FileDiffJson {
  return {
    file_name: change.fileName,
    file_path: change.filePath,
    ...(change.oldContent !== undefined ? { old_content: change.oldContent } : {}),
    new_content: change.newContent,
    formatted_diff: change.formattedDiff,
  };
}

function output(display: ToolDisplay): NonNullable<ToolCallJson['output']> {
  switch (display.type) {
    case 'text':
      return { text: display.text };
    case 'diff':
      return { diff: fileDiff(display.change) };
    case 'structured':
      return { structured_data: display.data };
  }
}

function details(p: ToolProposal): Partial<NonNullable<ToolCallJson['confirmation_request']>> {
  switch (p.type) {
    case 'edit':
      return { file_edit_details: fileDiff(p.change) };
    case 'execute':
      return {
        execute_details: {
          command: p.command,
          ...(p.workingDirectory !== undefined ? { working_directory: p.workingDirectory } : {}),
        },
      };
    case 'mcp':
      return { mcp_details: { server_name: p.serverName, tool_name: p.toolName } };
    case 'generic':
      return { generic_details: { description: p.description } };
  }
}

/** The ToolCall JSON (proto field names) for a snapshot, before schema building. */
export function toolCallJson(call: ToolCallSnapshot): ToolCallJson {
  const json: ToolCallJson = {
    tool_call_id: call.id,
    status: call.status,
    tool_name: call.toolName,
    input_parameters: call.input,
  };
  if (call.description !== undefined) json.description = call.description;
  if (call.liveContent !== undefined) json.live_content = call.liveContent;
  if (call.output !== undefined) json.output = output(call.output);
  if (call.error !== undefined) {
    json.error = {
      message: call.error.message,
      type: call.error.type,
      ...(call.error.statusCode !== undefined ? { status_code: call.error.statusCode } : {}),
    };
  }
  if (call.confirmation !== undefined) {
    json.confirmation_request = { options: call.confirmation.options, ...details(call.confirmation.proposal) };
  }
  return json;
}

export class RfcEncoder implements WireEncoder {
  readonly dialect = 'rfc' as const;
  constructor(private readonly schema: DevtoolSchema) {}

  /** Built metadata without an error, by model and kind: the same few objects for every event. */
  private readonly metaCache = new Map<string, Map<DevtoolEventKind, JsonObject>>();

  private meta(kind: DevtoolEventKind, ctx: EncodeContext, error?: string): JsonObject {
    const build = () => ({
      [DEVTOOL_EXTENSION_URI]: this.schema.developmentToolEvent({ kind, model: ctx.model, ...(error ? { error } : {}) }),
    });
    if (error) return build();
    // Looked up once per event (every text delta): two map reads, no key string built.
    let byKind = this.metaCache.get(ctx.model);
    if (!byKind) this.metaCache.set(ctx.model, (byKind = new Map<DevtoolEventKind, JsonObject>()));
    let meta = byKind.get(kind);
    if (!meta) byKind.set(kind, (meta = build()));
    return meta;
  }

  toolCallIdOf(update: TaskStatusUpdateEvent): string | undefined {
    if ((update.metadata?.[DEVTOOL_EXTENSION_URI] as { kind?: string } | undefined)?.kind !== 'TOOL_CALL_UPDATE') return undefined;
    const content = update.status?.message?.parts[0]?.content;
    return content?.$case === 'data' ? ((content.value as { tool_call_id?: string }).tool_call_id ?? undefined) : undefined;
  }

  waitingCallParts(updates: Iterable<TaskStatusUpdateEvent>): Part[] {
    return latestWaitingParts(
      updates,
      (u) => this.toolCallIdOf(u),
      (call) => call.status === 'PENDING' && call.confirmation_request !== undefined,
    );
  }

  taskView(task: Task): Task {
    return task;
  }

  /** The RFC has no event for a turn's or a call's steps that leave the task and the card as they are: nothing. */
  encode(event: AgentEvent, ctx: EncodeContext): EncodedEvent | undefined {
    if (event.type === 'artifact') return artifactEvent(event.artifact, ctx);
    if (event.type === 'turn-step' || event.type === 'call-step') return undefined;
    return { $case: 'statusUpdate', value: this.update(event, ctx) };
  }

  private update(event: Exclude<AgentEvent, { type: 'artifact' | 'turn-step' | 'call-step' }>, ctx: EncodeContext): TaskStatusUpdateEvent {
    const { taskId, contextId } = ctx;
    const working = STATE_TO_V1.working;
    switch (event.type) {
      case 'state': {
        const msg = event.text !== undefined ? agentMessage(taskId, contextId, [textPart(event.text)]) : undefined;
        const meta = this.meta('STATE_CHANGE', ctx, event.error);
        // A pause describes the answer it accepts (runtime/pause.ts); the cached metadata stays untouched.
        let metadata = event.inputSchema !== undefined ? { ...meta, inputSchema: event.inputSchema } : meta;
        if (event.reply !== undefined) metadata = { ...metadata, reply: event.reply };
        return statusUpdate(taskId, contextId, STATE_TO_V1[event.state], msg, metadata);
      }
      case 'tool-call': {
        const card = dataPart(this.schema.toolCall(toolCallJson(event.call)));
        // ToolCall has no field for it: the checkpoint taken before the call ran is named in its part's metadata.
        if (event.call.checkpoint !== undefined) card.metadata = { checkpoint: event.call.checkpoint };
        const parts = [card];
        // A failure's reason must reach text-only clients too, not only the DataPart.
        if (event.call.status === 'FAILED' && event.call.error !== undefined) {
          parts.push(textPart(`${event.call.toolName} failed: ${event.call.error.message}`));
        }
        return statusUpdate(taskId, contextId, working, agentMessage(taskId, contextId, parts), this.meta('TOOL_CALL_UPDATE', ctx));
      }
      case 'text':
        return statusUpdate(
          taskId,
          contextId,
          working,
          agentMessage(taskId, contextId, [textPart(event.delta)]),
          this.meta('TEXT_CONTENT', ctx),
        );
      case 'thought': {
        const part = dataPart(this.schema.agentThought({ subject: event.subject, description: event.description }));
        return statusUpdate(taskId, contextId, working, agentMessage(taskId, contextId, [part]), this.meta('THOUGHT', ctx));
      }
    }
  }
}
