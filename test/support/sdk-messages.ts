/** v1.0 Messages built for the @a2a-js/sdk client in tests (the SDK's proto-shaped types, every field set). */
import { randomUUID } from 'node:crypto';
import { Role } from '@a2a-js/sdk';
import type { Message, Part, SendMessageRequest } from '@a2a-js/sdk';

export const textPart = (text: string): Part => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

export const dataPart = (value: Record<string, unknown>): Part => ({
  content: { $case: 'data', value },
  metadata: undefined,
  filename: '',
  mediaType: 'application/json',
});

/** A user message with `parts` (a new messageId; no context or task unless `extra` names them). */
export function sdkMessage(parts: Part[], extra: Partial<Message> = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

export function sendRequest(msg: Message, configuration?: SendMessageRequest['configuration']): SendMessageRequest {
  return { tenant: '', message: msg, configuration, metadata: undefined };
}
