/** The v0.3 HTTP+JSON codec: proto JSON in and out, every part kind, events, cards, refusals. */
import t from 'tap';
import {
  agentCardToProtoJson,
  pushConfigParamsFromProtoJson,
  sendParamsFromProtoJson,
  sendResultToProtoJson,
  streamEventToProtoJson,
} from '../../../src/protocol/proto-json-v03.js';

t.test('inbound: every part kind, proto names, numeric roles', async (t) => {
  const params = sendParamsFromProtoJson({
    request: {
      message_id: 'm1',
      role: 1,
      context_id: 'c1',
      task_id: '',
      content: [
        { text: 'hi' },
        { file: { file_with_uri: 'https://x/y.png', mime_type: 'image/png' } },
        { file: { fileWithBytes: 'aGk=' } },
        { data: { data: { a: 1 } } },
        { data: {} },
      ],
    },
    configuration: { push_notification: { url: 'https://hook', authentication: { schemes: ['Bearer'] } }, history_length: 3 },
  });
  t.same(params, {
    message: {
      kind: 'message',
      messageId: 'm1',
      contextId: 'c1',
      role: 'user',
      parts: [
        { kind: 'text', text: 'hi' },
        { kind: 'file', file: { uri: 'https://x/y.png', mimeType: 'image/png' } },
        { kind: 'file', file: { bytes: 'aGk=' } },
        { kind: 'data', data: { a: 1 } },
        { kind: 'data', data: {} },
      ],
    },
    configuration: {
      pushNotificationConfig: { url: 'https://hook', authentication: { schemes: ['Bearer'] } },
      historyLength: 3,
      blocking: false,
    },
  });
  t.same(sendParamsFromProtoJson({ message: { messageId: 'm', role: 'ROLE_AGENT' } }).message, {
    kind: 'message',
    messageId: 'm',
    role: 'agent',
    parts: [],
  });
});

t.test('inbound refusals name the field', async (t) => {
  const refused = (body: Record<string, unknown>) => {
    try {
      sendParamsFromProtoJson(body);
      return 'accepted';
    } catch (err) {
      return (err as Error).message;
    }
  };
  t.match(refused({}), /^message must be a JSON object/);
  t.match(refused({ message: { role: 'user' } }), /message\.role must be "ROLE_USER" or "ROLE_AGENT", got "user"/);
  t.match(
    refused({ message: { role: 'constructor' } }),
    /message\.role must be "ROLE_USER" or "ROLE_AGENT", got "constructor"/,
    'no inherited name is a role',
  );
  t.match(
    refused({ message: { role: 'ROLE_USER', content: [{ text: 'a', data: { data: {} } }] } }),
    /content\[0\] sets text and data: a part is one of/,
  );
  t.match(refused({ message: { role: 'ROLE_USER', content: 'hi' } }), /message\.content must be an array/);
  t.match(
    refused({ message: { role: 'ROLE_USER', content: [{ file: { mimeType: 'x' } }] } }),
    /content\[0\]\.file needs fileWithUri or fileWithBytes/,
  );
  t.match(
    refused({ message: { role: 'ROLE_USER', content: [{ data: { data: [1] } }] } }),
    /content\[0\]\.data\.data must be a JSON object/,
  );
  t.match(refused({ message: { role: 'ROLE_USER' }, configuration: 'x' }), /configuration must be a JSON object/);
  t.throws(() => pushConfigParamsFromProtoJson({}, 't1'), /pushNotificationConfig is required/);
  t.same(
    pushConfigParamsFromProtoJson({ name: 'tasks/t1/pushNotificationConfigs/a', pushNotificationConfig: { id: 'a', url: 'u' } }, 't1'),
    {
      taskId: 't1',
      pushNotificationConfig: { id: 'a', url: 'u' },
    },
  );
  // The whole CreateTaskPushNotificationConfigRequest, as the v0.3 suite's REST client sends it.
  const wrapped = {
    parent: 'tasks/t1',
    config_id: 'cfg',
    config: { name: 'tasks/t1/pushNotificationConfigs/cfg', push_notification_config: { url: 'u', token: '', authentication: {} } },
  };
  t.same(pushConfigParamsFromProtoJson(wrapped, 't1'), {
    taskId: 't1',
    pushNotificationConfig: { url: 'u', authentication: { schemes: [] }, id: 'cfg' },
  });
  t.throws(() => pushConfigParamsFromProtoJson({ ...wrapped, parent: 'tasks/t2' }, 't1'), /parent "tasks\/t2" is not this path's task/);
  t.throws(
    () => pushConfigParamsFromProtoJson({ ...wrapped, parent: 'tasks/t1x' }, 't1'),
    /is not this path's task/,
    'a prefix is not the task',
  );
  t.throws(
    () => pushConfigParamsFromProtoJson({ name: 'tasks/t1x/pushNotificationConfigs/a', pushNotificationConfig: { url: 'u' } }, 't1'),
    /name "tasks\/t1x\/pushNotificationConfigs\/a" is not a config of this path's task/,
  );
  t.same(
    pushConfigParamsFromProtoJson({ name: 'tasks/t1/pushNotificationConfigs/from-name', pushNotificationConfig: { url: 'u' } }, 't1'),
    { taskId: 't1', pushNotificationConfig: { url: 'u', id: 'from-name' } },
    'a config without an id takes the one its name gives',
  );
  t.throws(() => pushConfigParamsFromProtoJson({ config: {} }, 't1'), /config\.pushNotificationConfig is required/);
});

t.test('outbound: messages, tasks with artifacts, both update events', async (t) => {
  const message = { kind: 'message', messageId: 'm', role: 'agent', parts: [{ kind: 'text', text: 'hello' }], taskId: 't' };
  t.same(sendResultToProtoJson(message), { message: { messageId: 'm', taskId: 't', role: 'ROLE_AGENT', content: [{ text: 'hello' }] } });
  const task = {
    kind: 'task',
    id: 't',
    contextId: 'c',
    status: { state: 'canceled', timestamp: '2026-11-26T00:00:00Z' },
    artifacts: [
      {
        artifactId: 'a',
        name: 'out',
        parts: [
          { kind: 'file', file: { uri: 'https://x/f', mimeType: 'text/plain' } },
          { kind: 'file', file: { bytes: 'aGk=' } },
          { kind: 'data', data: { k: 'v' } },
        ],
      },
    ],
    history: [],
  };
  t.same(sendResultToProtoJson(task), {
    task: {
      id: 't',
      contextId: 'c',
      status: { state: 'TASK_STATE_CANCELLED', timestamp: '2026-11-26T00:00:00Z' },
      artifacts: [
        {
          artifactId: 'a',
          name: 'out',
          parts: [
            { file: { fileWithUri: 'https://x/f', mimeType: 'text/plain' } },
            { file: { fileWithBytes: 'aGk=' } },
            { data: { data: { k: 'v' } } },
          ],
        },
      ],
      history: [],
    },
  });
  t.same(
    streamEventToProtoJson({
      kind: 'status-update',
      taskId: 't',
      contextId: 'c',
      status: { state: 'input-required', message },
      final: true,
    }),
    {
      statusUpdate: {
        taskId: 't',
        contextId: 'c',
        status: {
          state: 'TASK_STATE_INPUT_REQUIRED',
          message: { messageId: 'm', taskId: 't', role: 'ROLE_AGENT', content: [{ text: 'hello' }] },
        },
        final: true,
      },
    },
  );
  t.same(
    streamEventToProtoJson({
      kind: 'artifact-update',
      taskId: 't',
      contextId: 'c',
      artifact: { artifactId: 'a', parts: [{ kind: 'text', text: 'x' }] },
      append: true,
      lastChunk: false,
    }),
    {
      artifactUpdate: {
        taskId: 't',
        contextId: 'c',
        artifact: { artifactId: 'a', parts: [{ text: 'x' }] },
        append: true,
        lastChunk: false,
      },
    },
  );
  t.same((streamEventToProtoJson(task) as { task: { status: unknown } }).task.status, {
    state: 'TASK_STATE_CANCELLED',
    timestamp: '2026-11-26T00:00:00Z',
  });
});

t.test('the card: security schemes as the proto oneof, requirements as string lists, proto fields only', async (t) => {
  const card = agentCardToProtoJson({
    protocolVersion: '0.3.0',
    name: 'n',
    url: 'http://127.0.0.1/',
    capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: false },
    securitySchemes: {
      key: { type: 'apiKey', in: 'header', name: 'x-api-key' },
      bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      oidc: { type: 'openIdConnect', openIdConnectUrl: 'https://id/.well-known/openid-configuration' },
      mtls: { type: 'mutualTLS' },
    },
    security: [{ key: [] }, { bearer: ['approver'] }],
    skills: [{ id: 's', name: 'S', description: 'd', tags: [], security: [{ key: [] }] }],
    supportedInterfaces: [],
  });
  t.same(card.securitySchemes, {
    key: { apiKeySecurityScheme: { location: 'header', name: 'x-api-key' } },
    bearer: { httpAuthSecurityScheme: { scheme: 'bearer', bearerFormat: 'JWT' } },
    oidc: { openIdConnectSecurityScheme: { openIdConnectUrl: 'https://id/.well-known/openid-configuration' } },
    mtls: { mtlsSecurityScheme: {} },
  });
  t.same(card.security, [{ schemes: { key: { list: [] } } }, { schemes: { bearer: { list: ['approver'] } } }]);
  t.same((card.skills as any[])[0].security, [{ schemes: { key: { list: [] } } }]);
  t.same(card.capabilities, { streaming: true, pushNotifications: true }, 'stateTransitionHistory is not in the v0.3 proto');
  t.notOk('supportedInterfaces' in card);
});
