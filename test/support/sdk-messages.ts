/** v1.0 Messages for the @a2a-js/sdk client in tests: the server's own part and message builders, plus request shapes. */
import type { Message, Part, SendMessageRequest } from '@a2a-js/sdk';
import { userMessage } from '../../src/protocol/a2a.js';

export { dataPart, textPart } from '../../src/protocol/a2a.js';

/** A user message with `parts` (a new messageId; no context or task unless `extra` names them). */
export function sdkMessage(parts: Part[], extra: Partial<Message> = {}): Message {
  return { ...userMessage('', parts), ...extra };
}

export function sendRequest(msg: Message, configuration?: SendMessageRequest['configuration']): SendMessageRequest {
  return { tenant: '', message: msg, configuration, metadata: undefined };
}
