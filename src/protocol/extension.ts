/**
 * Identifiers of the development-tool extension (RFC §3.1). Every custom object the
 * server puts in, or reads from, A2A `metadata` is keyed by this URI (RFC §3.2).
 */
export const DEVTOOL_EXTENSION_URI = 'https://github.com/google-gemini/gemini-cli/blob/main/docs/a2a/developer-profile/v0/spec.md';

export const DEVTOOL_EXTENSION_DESCRIPTION =
  'Interactive development tasks: tool calls with live status, approval before side effects, thoughts and streamed text.';

/** Confirmation option ids offered on a PENDING ToolCall (RFC §3.2 ConfirmationOption.id). */
export const ConfirmationOptionId = {
  proceedOnce: 'proceed_once',
  proceedAlways: 'proceed_always',
  /** MCP: always allow this tool of the server. */
  proceedAlwaysTool: 'proceed_always_tool',
  /** MCP: always allow every tool of the server. */
  proceedAlwaysServer: 'proceed_always_server',
  modifyWithEditor: 'modify_with_editor',
  cancel: 'cancel',
} as const;
export type ConfirmationOptionId = (typeof ConfirmationOptionId)[keyof typeof ConfirmationOptionId];
