/**
 * A2A v0.3's HTTP+JSON bodies: the proto3 JSON of the v0.3 `a2a.proto` (`content` for a
 * message's parts, `ROLE_USER`, `TASK_STATE_CANCELLED`, parts as a oneof, push configs named
 * `tasks/{id}/pushNotificationConfigs/{configId}`), to and from the v0.3 JSON-RPC shapes the
 * SDK's v0.3 handler speaks (`kind`, `parts`, `"user"`, `"canceled"`). Pure functions on JSON.
 *
 * Inbound, each field is read by its lowerCamelCase JSON name or by its proto name
 * (`message_id`), as proto3 JSON parsers must accept both; a message may come as `message` or
 * `request` (its proto name). What cannot be read is refused with the field's path.
 */
import type { JsonObject } from './a2a.js';
import { invalidParams } from './errors.js';
import { isObject } from '../lib/is-object.js';

/** The value of `camel` (or its proto name `snake`) in `o`. */
function field(o: JsonObject, camel: string, snake?: string): unknown {
  if (o[camel] !== undefined) return o[camel];
  return snake === undefined ? undefined : o[snake];
}

function objectAt(v: unknown, path: string): JsonObject {
  if (!isObject(v)) throw invalidParams(`${path} must be a JSON object`);
  return v;
}

function optionalObject(v: unknown, path: string): JsonObject | undefined {
  return v === undefined || v === null ? undefined : objectAt(v, path);
}

function listAt(v: unknown, path: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalidParams(`${path} must be an array`);
  return v;
}

/** Leaves out the keys whose value is undefined, so the JSON carries only what is there. */
function defined(o: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

const ROLE_IN: Readonly<Record<string, string>> = { ROLE_USER: 'user', ROLE_AGENT: 'agent', '1': 'user', '2': 'agent' };
const ROLE_OUT: Readonly<Record<string, string>> = { user: 'ROLE_USER', agent: 'ROLE_AGENT' };

const STATE_OUT: Readonly<Record<string, string>> = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
  canceled: 'TASK_STATE_CANCELLED',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  rejected: 'TASK_STATE_REJECTED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
  unknown: 'TASK_STATE_UNSPECIFIED',
};

// ---------- inbound: proto JSON → v0.3 JSON-RPC params ----------

/** The value of `key` in a lookup table, never an inherited property (`constructor`, `__proto__`). */
const own = (table: Readonly<Record<string, string>>, key: string): string | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined;

const PART_CASES = ['text', 'file', 'data'] as const;

function partIn(v: unknown, path: string): JsonObject {
  const p = objectAt(v, path);
  const cases = PART_CASES.filter((c) => p[c] !== undefined && p[c] !== null);
  if (cases.length > 1) throw invalidParams(`${path} sets ${cases.join(' and ')}: a part is one of text, file or data`);
  if (typeof p.text === 'string') return { kind: 'text', text: p.text };
  if (p.file !== undefined) {
    const f = objectAt(p.file, `${path}.file`);
    const mimeType = field(f, 'mimeType', 'mime_type');
    const uri = field(f, 'fileWithUri', 'file_with_uri');
    const bytes = field(f, 'fileWithBytes', 'file_with_bytes');
    if (typeof uri === 'string') return { kind: 'file', file: defined({ uri, mimeType }) };
    if (typeof bytes === 'string') return { kind: 'file', file: defined({ bytes, mimeType }) };
    throw invalidParams(`${path}.file needs fileWithUri or fileWithBytes`);
  }
  if (p.data !== undefined) {
    const d = objectAt(p.data, `${path}.data`);
    return { kind: 'data', data: optionalObject(d.data, `${path}.data.data`) ?? {} };
  }
  throw invalidParams(`${path} must be a text, file or data part`);
}

function messageIn(v: unknown, path: string): JsonObject {
  const m = objectAt(v, path);
  const role = field(m, 'role');
  const mapped = own(ROLE_IN, String(role));
  if (mapped === undefined) throw invalidParams(`${path}.role must be "ROLE_USER" or "ROLE_AGENT", got ${JSON.stringify(role ?? null)}`);
  return defined({
    kind: 'message',
    messageId: field(m, 'messageId', 'message_id'),
    contextId: field(m, 'contextId', 'context_id') || undefined,
    taskId: field(m, 'taskId', 'task_id') || undefined,
    role: mapped,
    parts: listAt(field(m, 'content', 'parts'), `${path}.content`).map((p, i) => partIn(p, `${path}.content[${i}]`)),
    metadata: field(m, 'metadata'),
    extensions: field(m, 'extensions'),
  });
}

function pushConfigIn(v: unknown, path: string): JsonObject | undefined {
  const c = optionalObject(v, path);
  if (c === undefined) return undefined;
  const auth = optionalObject(field(c, 'authentication'), `${path}.authentication`);
  return defined({
    id: field(c, 'id') || undefined,
    url: field(c, 'url'),
    token: field(c, 'token') || undefined,
    authentication: auth && defined({ schemes: field(auth, 'schemes') ?? [], credentials: field(auth, 'credentials') || undefined }),
  });
}

/**
 * A `SendMessageRequest` body as `message/send` params. `blocking` is a proto3 bool, so a
 * `configuration` without it means false (proto JSON writers omit a false value); with no
 * `configuration` at all it is left absent, and the send waits as on JSON-RPC.
 */
export function sendParamsFromProtoJson(body: JsonObject): JsonObject {
  const config = optionalObject(field(body, 'configuration'), 'configuration');
  return defined({
    message: messageIn(field(body, 'message', 'request'), 'message'),
    configuration:
      config &&
      defined({
        acceptedOutputModes: field(config, 'acceptedOutputModes', 'accepted_output_modes'),
        pushNotificationConfig: pushConfigIn(field(config, 'pushNotification', 'push_notification'), 'configuration.pushNotification'),
        historyLength: field(config, 'historyLength', 'history_length') || undefined,
        blocking: field(config, 'blocking') === true,
      }),
    metadata: field(body, 'metadata'),
  });
}

/** The `tasks/{id}/pushNotificationConfigs/{configId}` a config is named by. */
const pushConfigName = (taskId: string, configId: string) => `tasks/${taskId}/pushNotificationConfigs/${configId}`;

/**
 * A config posted to `/v1/tasks/{taskId}/pushNotificationConfigs` as `tasks/pushNotificationConfig/set`
 * params: the `TaskPushNotificationConfig` itself (the proto's HTTP rule makes `config` the body), or
 * the whole `CreateTaskPushNotificationConfigRequest` (`parent`, `configId`, `config`) that some
 * clients send. Every name in it must name the path's task; `configId` is the id when the config has none.
 */
export function pushConfigParamsFromProtoJson(body: JsonObject, taskId: string): JsonObject {
  const wrapped = optionalObject(field(body, 'config'), 'config');
  const tpc = wrapped ?? body;
  const parent = field(body, 'parent');
  if (parent !== undefined && parent !== '' && parent !== `tasks/${taskId}`) {
    throw invalidParams(`parent ${JSON.stringify(parent)} is not this path's task: expected "tasks/${taskId}"`);
  }
  const name = field(tpc, 'name');
  const named = typeof name === 'string' && name !== '' ? /^tasks\/([^/]+)\/pushNotificationConfigs\/([^/]*)$/.exec(name) : undefined;
  if (named === null || (named !== undefined && named[1] !== taskId)) {
    const expected = `tasks/${taskId}/pushNotificationConfigs/{configId}`;
    throw invalidParams(`name ${JSON.stringify(name)} is not a config of this path's task: expected "${expected}"`);
  }
  const path = wrapped ? 'config.pushNotificationConfig' : 'pushNotificationConfig';
  const config = pushConfigIn(field(tpc, 'pushNotificationConfig', 'push_notification_config'), path);
  if (config === undefined) throw invalidParams(`${path} is required`);
  // The id: the config's own, else the one its name gives, else the request's configId.
  const configId = config.id ?? (named?.[2] || undefined) ?? (field(body, 'configId', 'config_id') || undefined);
  return { taskId, pushNotificationConfig: configId === undefined ? config : { ...config, id: configId } };
}

// ---------- outbound: v0.3 JSON-RPC results → proto JSON ----------

function partOut(p: JsonObject): JsonObject {
  if (p.kind === 'text') return { text: p.text };
  if (p.kind === 'file') {
    const f = isObject(p.file) ? p.file : {};
    return { file: defined({ fileWithUri: f.uri, fileWithBytes: f.bytes, mimeType: f.mimeType }) };
  }
  return { data: { data: isObject(p.data) ? p.data : {} } };
}

const partsOut = (parts: unknown): JsonObject[] => (Array.isArray(parts) ? parts.filter(isObject).map(partOut) : []);

function messageOut(m: JsonObject): JsonObject {
  return defined({
    messageId: m.messageId,
    contextId: m.contextId,
    taskId: m.taskId,
    role: own(ROLE_OUT, String(m.role)) ?? 'ROLE_UNSPECIFIED',
    content: partsOut(m.parts),
    metadata: m.metadata,
    extensions: m.extensions,
  });
}

function statusOut(s: unknown): JsonObject {
  const status = isObject(s) ? s : {};
  return defined({
    state: own(STATE_OUT, String(status.state)) ?? 'TASK_STATE_UNSPECIFIED',
    message: isObject(status.message) ? messageOut(status.message) : undefined,
    timestamp: status.timestamp,
  });
}

function artifactOut(a: JsonObject): JsonObject {
  return defined({
    artifactId: a.artifactId,
    name: a.name,
    description: a.description,
    parts: partsOut(a.parts),
    metadata: a.metadata,
    extensions: a.extensions,
  });
}

export function taskToProtoJson(t: JsonObject): JsonObject {
  return defined({
    id: t.id,
    contextId: t.contextId,
    status: statusOut(t.status),
    artifacts: Array.isArray(t.artifacts) ? t.artifacts.filter(isObject).map(artifactOut) : undefined,
    history: Array.isArray(t.history) ? t.history.filter(isObject).map(messageOut) : undefined,
    metadata: t.metadata,
  });
}

/** A `message/send` result as a `SendMessageResponse`: `{task}` or `{message}`. */
export function sendResultToProtoJson(r: JsonObject): JsonObject {
  return r.kind === 'message' ? { message: messageOut(r) } : { task: taskToProtoJson(r) };
}

/** One event of a v0.3 stream as a `StreamResponse`. */
export function streamEventToProtoJson(e: JsonObject): JsonObject {
  switch (e.kind) {
    case 'message':
      return { message: messageOut(e) };
    case 'status-update':
      return {
        statusUpdate: defined({
          taskId: e.taskId,
          contextId: e.contextId,
          status: statusOut(e.status),
          final: e.final,
          metadata: e.metadata,
        }),
      };
    case 'artifact-update':
      return {
        artifactUpdate: defined({
          taskId: e.taskId,
          contextId: e.contextId,
          artifact: isObject(e.artifact) ? artifactOut(e.artifact) : undefined,
          append: e.append,
          lastChunk: e.lastChunk,
          metadata: e.metadata,
        }),
      };
    default:
      return { task: taskToProtoJson(e) };
  }
}

/** A v0.3 `TaskPushNotificationConfig` as its proto JSON, named by task and config id. */
export function pushConfigToProtoJson(c: JsonObject): JsonObject {
  const config = isObject(c.pushNotificationConfig) ? c.pushNotificationConfig : {};
  const auth = isObject(config.authentication) ? config.authentication : undefined;
  return {
    name: pushConfigName(String(c.taskId), typeof config.id === 'string' ? config.id : ''),
    pushNotificationConfig: defined({
      id: config.id,
      url: config.url,
      token: config.token,
      authentication: auth && defined({ schemes: auth.schemes, credentials: auth.credentials }),
    }),
  };
}

function securitySchemeOut(s: JsonObject): JsonObject {
  const description = s.description;
  switch (s.type) {
    case 'apiKey':
      return { apiKeySecurityScheme: defined({ description, location: s.in, name: s.name }) };
    case 'http':
      return { httpAuthSecurityScheme: defined({ description, scheme: s.scheme, bearerFormat: s.bearerFormat }) };
    case 'oauth2':
      return { oauth2SecurityScheme: defined({ description, flows: s.flows, oauth2MetadataUrl: s.oauth2MetadataUrl }) };
    case 'openIdConnect':
      return { openIdConnectSecurityScheme: defined({ description, openIdConnectUrl: s.openIdConnectUrl }) };
    default:
      return { mtlsSecurityScheme: defined({ description }) };
  }
}

const securityOut = (list: unknown): JsonObject[] | undefined =>
  Array.isArray(list)
    ? list
        .filter(isObject)
        .map((req) => ({ schemes: Object.fromEntries(Object.entries(req).map(([name, scopes]) => [name, { list: scopes }])) }))
    : undefined;

/** A v0.3 agent card (JSON-RPC form) as the `AgentCard` proto JSON that `GET /v1/card` answers. */
export function agentCardToProtoJson(c: JsonObject): JsonObject {
  const schemes = isObject(c.securitySchemes) ? c.securitySchemes : {};
  const caps = isObject(c.capabilities) ? c.capabilities : {};
  const skill = (s: JsonObject) =>
    defined({
      id: s.id,
      name: s.name,
      description: s.description,
      tags: s.tags,
      examples: s.examples,
      inputModes: s.inputModes,
      outputModes: s.outputModes,
      security: securityOut(s.security),
    });
  // The proto's fields only (a v0.3 JSON card may carry others, such as stateTransitionHistory).
  return defined({
    protocolVersion: c.protocolVersion,
    name: c.name,
    description: c.description,
    url: c.url,
    preferredTransport: c.preferredTransport,
    additionalInterfaces: c.additionalInterfaces,
    provider: c.provider,
    version: c.version,
    documentationUrl: c.documentationUrl,
    capabilities: defined({ streaming: caps.streaming, pushNotifications: caps.pushNotifications, extensions: caps.extensions }),
    securitySchemes: Object.fromEntries(
      Object.entries(schemes).flatMap(([k, s]) => (isObject(s) ? [[k, securitySchemeOut(s)] as const] : [])),
    ),
    security: securityOut(c.security),
    defaultInputModes: c.defaultInputModes,
    defaultOutputModes: c.defaultOutputModes,
    skills: Array.isArray(c.skills) ? c.skills.filter(isObject).map(skill) : undefined,
    supportsAuthenticatedExtendedCard: c.supportsAuthenticatedExtendedCard,
    signatures: c.signatures,
  });
}
