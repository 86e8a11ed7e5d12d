/**
 * proto/development_tool.proto must carry every message of the RFC (§3.2, §3.3) with the RFC's
 * field names, numbers and enum value names. The expected table below is transcribed from the RFC;
 * the proto is read as text so a rename or renumbering there fails this test.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';

const proto = readFileSync(new URL('../../../proto/development_tool.proto', import.meta.url), 'utf8');

const RFC: Record<string, string[]> = {
  // Fields 2-4 and McpServerConfig/ApprovalMode are this server's extension (not in the RFC), checked in EXTENSION below.
  AgentSettings: [
    'string workspace_path = 1',
    'ApprovalMode approval_mode = 2',
    'repeated string allowed_tools = 3',
    'map<string, McpServerConfig> mcp_servers = 4',
  ],
  ToolCall: [
    'string tool_call_id = 1',
    'ToolCallStatus status = 2',
    'string tool_name = 3',
    'optional string description = 4',
    'google.protobuf.Struct input_parameters = 5',
    'optional string live_content = 6',
    'ToolOutput output = 7',
    'ErrorDetails error = 8',
    'optional ConfirmationRequest confirmation_request = 9',
  ],
  ToolOutput: ['string text = 1', 'FileDiff diff = 2', 'google.protobuf.Struct structured_data = 3'],
  ErrorDetails: ['string message = 1', 'optional string type = 2', 'optional int32 status_code = 3'],
  ConfirmationRequest: [
    'repeated ConfirmationOption options = 1',
    'ExecuteDetails execute_details = 2',
    'FileDiff file_edit_details = 3',
    'McpDetails mcp_details = 4',
    'GenericDetails generic_details = 5',
  ],
  ConfirmationOption: ['string id = 1', 'string name = 2', 'optional string description = 3'],
  ExecuteDetails: ['string command = 1', 'optional string working_directory = 2'],
  FileDiff: [
    'string file_name = 1',
    'string file_path = 2',
    'optional string old_content = 3',
    'string new_content = 4',
    'optional string formatted_diff = 5',
  ],
  McpDetails: ['string server_name = 1', 'string tool_name = 2'],
  GenericDetails: ['string description = 1'],
  AgentThought: ['string subject = 1', 'string description = 2'],
  DevelopmentToolEvent: ['DevelopmentToolEventKind kind = 1', 'string model = 2', 'string user_tier = 3', 'string error = 4'],
  ToolCallConfirmation: ['string tool_call_id = 1', 'string selected_option_id = 2', 'ModifiedFileDetails file_details = 3'],
  ModifiedFileDetails: ['string new_content = 1'],
  GetAllSlashCommandsResponse: ['repeated SlashCommand commands = 1'],
  SlashCommand: [
    'string name = 1',
    'string description = 2',
    'repeated SlashCommandArgument arguments = 3',
    'repeated SlashCommand sub_commands = 4',
  ],
  SlashCommandArgument: ['string name = 1', 'string description = 2', 'bool is_required = 3'],
  ExecuteSlashCommandRequest: ['repeated string command_path = 1', 'string args = 2', 'string context_id = 3'],
  ExecuteSlashCommandResponse: ['string execution_id = 1', 'CommandExecutionStatus status = 2', 'string message = 3'],
};

/** This server's additions (not in RFC v0); the RFC's own field numbers above are untouched. */
const EXTENSION: Record<string, string[]> = {
  // The RFC's three fields, then the user's optional feedback on the answer.
  ToolCallConfirmation: [...(RFC.ToolCallConfirmation ?? []), 'optional string feedback = 4'],
  McpServerConfig: [
    'string command = 1',
    'repeated string args = 2',
    'map<string, string> env = 3',
    'string cwd = 4',
    'string url = 5',
    'string http_url = 6',
    'map<string, string> headers = 7',
    'int32 timeout = 8',
  ],
};
Object.assign(RFC, EXTENSION);

const ENUMS: Record<string, string[]> = {
  ApprovalMode: ['APPROVAL_MODE_UNSPECIFIED = 0', 'DEFAULT = 1', 'AUTO_EDIT = 2', 'YOLO = 3'],
  ToolCallStatus: ['STATUS_UNSPECIFIED = 0', 'PENDING = 1', 'EXECUTING = 2', 'SUCCEEDED = 3', 'FAILED = 4', 'CANCELLED = 5'],
  DevelopmentToolEventKind: [
    'DEVELOPMENT_TOOL_EVENT_KIND_UNSPECIFIED = 0',
    'TOOL_CALL_CONFIRMATION = 1',
    'TOOL_CALL_UPDATE = 2',
    'TEXT_CONTENT = 3',
    'STATE_CHANGE = 4',
    'THOUGHT = 5',
  ],
  CommandExecutionStatus: [
    'COMMAND_EXECUTION_STATUS_UNSPECIFIED = 0',
    'STARTED = 1',
    'FAILED_TO_START = 2',
    'AWAITING_SHELL_CONFIRMATION = 3',
    'AWAITING_ACTION_CONFIRMATION = 4',
  ],
};

/** Statements of block `kind name { ... }`, comments stripped; oneof members kept, nested enums dropped. */
function block(kind: 'message' | 'enum', name: string): string[] {
  const code = proto.replace(/\/\/.*$/gm, '');
  const m = new RegExp(`\\b${kind}\\s+${name}\\s*\\{`).exec(code);
  if (!m) return [];
  const open = code.indexOf('{', m.index);
  let depth = 0;
  let end = open;
  for (let i = open; i < code.length; i++) {
    if (code[i] === '{') depth++;
    else if (code[i] === '}' && --depth === 0) {
      end = i;
      break;
    }
  }
  return code
    .slice(open + 1, end)
    .replace(/\benum\s+\w+\s*\{[^}]*\}/g, '') // nested enums are checked on their own
    .replace(/\boneof\s+\w+\s*\{|\}/g, ';')
    .split(';')
    .map((s) => s.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
}

t.equal(proto.match(/^package development_tool\.v0;$/m)?.[0], 'package development_tool.v0;');
t.match(proto, /^syntax = "proto3";$/m);
t.match(proto, /^import "google\/protobuf\/struct\.proto";$/m);
t.match(proto, /Source of truth: the development-tool extension RFC/, 'header names the RFC it copies');

t.strictSame([...proto.matchAll(/^\s*message (\w+)/gm)].map((m) => m[1]).sort(), Object.keys(RFC).sort(), 'exactly the RFC messages');
for (const [name, fields] of Object.entries(RFC)) t.strictSame(block('message', name), fields, `message ${name}`);
for (const [name, values] of Object.entries(ENUMS)) t.strictSame(block('enum', name), values, `enum ${name}`);
const flat = proto.replace(/\/\/.*$/gm, '').replace(/\s+/g, ' ');
const oneofs = [...flat.matchAll(/oneof \w+ \{[^}]*\}/g)].map((m) => m[0]);
t.strictSame(oneofs, [
  'oneof result { ToolOutput output = 7; ErrorDetails error = 8; }',
  'oneof result { string text = 1; FileDiff diff = 2; google.protobuf.Struct structured_data = 3; }',
  'oneof details { ExecuteDetails execute_details = 2; FileDiff file_edit_details = 3; McpDetails mcp_details = 4; GenericDetails generic_details = 5; }',
  'oneof modified_details { ModifiedFileDetails file_details = 3; }',
]);
