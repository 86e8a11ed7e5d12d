/**
 * The reference client of this server (`devtool-a2a-server/client`): an A2A connection over
 * JSON-RPC and SSE, the pure fold of a task's events into a view model of cards, and a
 * session that follows a task across dropped streams. No Node-only API: it runs in browsers.
 */
export { A2AConnection, buildMessage } from './connection.js';
export type { A2AConnectionOptions, CommandStart, OutgoingMessage, StreamOptions, TaskList, TaskSummary } from './connection.js';
export { A2AClientError, RpcCode, StreamDroppedError } from './errors.js';
export { TaskSession } from './session.js';
export type { AnswerOptions, SendOptions, TaskSessionOptions } from './session.js';
export { itemOf, readSse } from './sse.js';
export { emptyView, foldEvent, userEntries } from './view.js';
export type {
  ArtifactView,
  CardOption,
  ConnectionState,
  FileDiffView,
  StreamItem,
  TaskState,
  TaskView,
  Thought,
  ToolCallStatus,
  ToolCardView,
  TranscriptEntry,
} from './view.js';
export { FINAL_STATES, TERMINAL_STATES, normalizeResult, normalizeState } from './wire.js';
export type { JsonObject, WireArtifact, WireMessage, WirePart, WireResult, WireStatus, WireStatusUpdate, WireTask } from './wire.js';
export { DEVTOOL_EXTENSION_URI } from '../protocol/extension.js';
