import t from 'tap';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role } from '@a2a-js/sdk';
import { startServer, URI } from '../support/server.js';

t.test('explore', async (t) => {
  const srv = await startServer(t);
  const tr = new LegacyJsonRpcTransport({ endpoint: srv.url });
  const msg: any = { messageId: 'x1', role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: 'write a greeting' }, metadata: undefined, filename: '', mediaType: '' }], metadata: { [URI]: { workspace_path: srv.workspace } }, contextId: '', taskId: '', extensions: [], referenceTaskIds: [] };
  const evs: any[] = [];
  for await (const e of tr.sendMessageStream({ tenant: '', message: msg, configuration: undefined, metadata: undefined })) evs.push(e);
  console.log(JSON.stringify(evs, null, 1).slice(0, 6000));
  const f = new ClientFactory();
  const c = await f.createFromUrl(srv.url);
  console.log(c.protocolVersion, (c as any).transport.constructor.name);
  t.pass();
});
