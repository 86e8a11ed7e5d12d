/**
 * Runs one tool call of a turn and keeps its ToolCall card current:
 * PENDING → EXECUTING (with live_content) → SUCCEEDED | FAILED, or PENDING → CANCELLED.
 */
import type { ToolResult } from '../tools/tool.js';
import type { LiveTask, TurnCall } from './live-task.js';

function responsePart(call: TurnCall, response: Record<string, unknown>): TurnCall['response'] {
  return { functionResponse: { id: call.modelCallId, name: call.snapshot.toolName, response } };
}

function finish(task: LiveTask, call: TurnCall, result: ToolResult): void {
  // Cancelled while it ran (tasks/cancel marked it CANCELLED): the record stays as it is.
  if (call.phase === 'done' || task.isCanceled) return;
  const snap = call.snapshot;
  delete snap.liveContent; // the final result replaces live_content (RFC §3.2)
  if (result.isError) {
    snap.status = 'FAILED';
    snap.error = result.error;
    // The model gets the reason (timed out, exit code, …) and whatever output there was.
    const response: Record<string, unknown> = { error: result.error.message, error_type: result.error.type };
    if (result.llmContent !== undefined && result.llmContent !== result.error.message) response.output = result.llmContent;
    call.response = responsePart(call, response);
  } else {
    snap.status = 'SUCCEEDED';
    snap.output = result.display;
    call.response = responsePart(call, { output: result.llmContent });
  }
  call.phase = 'done';
  task.publishCall(call);
  task.audit({
    toolCallId: snap.id,
    decision: result.isError ? 'failed' : 'succeeded',
    detail: result.isError ? { error: result.error } : undefined,
  });
}

/** Executes `call` (already approved or needing no approval). Never throws. */
export async function executeCall(task: LiveTask, call: TurnCall): Promise<void> {
  const snap = call.snapshot;
  call.phase = 'executing';
  snap.status = 'EXECUTING';
  delete snap.confirmation;
  task.publishCall(call);
  task.audit({ toolCallId: snap.id, decision: 'executed', optionId: call.answer, shownHash: call.shownHash });
  if (call.tool === undefined || call.args === undefined) {
    // Unknown tool or invalid arguments: the error was recorded when the turn opened.
    finish(task, call, { isError: true, error: snap.error ?? { message: 'Tool call could not be run', type: 'invalid_call' } });
    return;
  }
  let result: ToolResult;
  try {
    result = await call.tool.run(call.args, {
      workspace: task.context.workspace,
      signal: task.abort.signal,
      onLiveOutput: (text) => {
        if (call.phase !== 'executing' || text === snap.liveContent) return;
        snap.liveContent = text;
        task.publishCall(call);
      },
    });
  } catch (err) {
    result = { isError: true, error: { message: `Tool ${snap.toolName} crashed: ${(err as Error).message}`, type: 'tool_crashed' } };
  }
  finish(task, call, result);
}

/** Marks an awaiting call declined by the user. The model is told so and the turn goes on. */
export function declineCall(
  task: LiveTask,
  call: TurnCall,
  reason = 'The user declined this tool call.',
  type: 'declined' | 'cancelled' | 'approval_timeout' = 'declined',
  principal?: string,
): void {
  const snap = call.snapshot;
  snap.status = 'CANCELLED';
  delete snap.confirmation;
  delete snap.liveContent;
  snap.error = { message: reason, type };
  call.response = responsePart(call, { error: `${reason} Do not retry it unless the user asks.` });
  call.phase = 'done';
  task.publishCall(call);
  const decision = type === 'declined' ? 'declined' : type === 'cancelled' ? 'cancelled' : 'expired';
  task.audit({ toolCallId: snap.id, decision, principal, optionId: call.answer, shownHash: call.shownHash });
}
