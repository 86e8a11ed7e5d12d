import t from 'tap';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { mapCallToolResult, McpTool, mcpToolName, type McpCallOptions, type McpToolTarget } from '../../../src/mcp/index.js';
import type { ToolContext } from '../../../src/tools/tool.js';

/** A hand-written target: answers from a script and records calls. */
class FakeTarget implements McpToolTarget {
  readonly calls: Array<{ toolName: string; args: Record<string, unknown>; options: McpCallOptions }> = [];
  constructor(
    readonly serverName: string,
    private readonly answer: (options: McpCallOptions) => Promise<CallToolResult>,
  ) {}

  callTool(toolName: string, args: Record<string, unknown>, options: McpCallOptions): Promise<CallToolResult> {
    this.calls.push({ toolName, args, options });
    return this.answer(options);
  }
}

const definition = {
  name: 'create_issue',
  description: 'Creates an issue.',
  inputSchema: {
    type: 'object' as const,
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    properties: { title: { type: 'string' }, body: { type: 'string' } },
    required: ['title'],
  },
};

function ctx(signal = new AbortController().signal, onLiveOutput?: (s: string) => void): ToolContext {
  return { workspace: '/ws', signal, onLiveOutput };
}

t.test('mcpToolName prefixes, sanitizes and bounds names', async (t) => {
  t.equal(mcpToolName('github', 'create_issue'), 'github__create_issue');
  t.equal(mcpToolName('fs', 'read file/v2:x'), 'fs__read_file_v2_x');
  t.equal(mcpToolName('k8s', 'get.pods-v1'), 'k8s__get.pods-v1');
  t.equal(mcpToolName('1password', 'get'), '_1password__get', 'Gemini names start with a letter or _');
  t.equal(mcpToolName('-x', 'y'), '_-x__y');
  const long = mcpToolName('server', `${'a'.repeat(50)}_tail_${'b'.repeat(30)}`);
  t.equal(long.length, 64);
  t.equal(long, `server__${'a'.repeat(22)}___${'_'}${'b'.repeat(30)}`, 'first 30 + ___ + last 31');
  t.match(long, /^[A-Za-z0-9_.-]+$/);
  t.equal(mcpToolName('s', 'x'.repeat(56)).length, 59, 'names of 64 or fewer are kept whole');
});

t.test('shape, validate, describe, propose', async (t) => {
  const tool = new McpTool(new FakeTarget('github', async () => ({ content: [] })), definition);
  t.equal(tool.name, 'github__create_issue');
  t.equal(tool.kind, 'other');
  t.equal(tool.description, 'Creates an issue.');
  t.same(tool.mcp, { serverName: 'github', toolName: 'create_issue' });
  t.same(tool.parameters, { type: 'object', properties: { title: { type: 'string' }, body: { type: 'string' } }, required: ['title'] });
  t.equal(tool.describe(), 'github: create_issue');
  t.same(await tool.propose(), { type: 'mcp', serverName: 'github', toolName: 'create_issue' });
  t.same(tool.validate({ title: 'x' }), { ok: true, args: { title: 'x' } });
  t.same(tool.validate({ body: 'x' }), {
    ok: false,
    error: { type: 'invalid_argument', message: 'Missing required argument "title" for github__create_issue' },
  });
  for (const bad of [null, [], 'x']) {
    t.same(tool.validate(bad as never), {
      ok: false,
      error: { type: 'invalid_argument', message: 'The arguments of github__create_issue must be an object' },
    });
  }
  const named = new McpTool(
    new FakeTarget('s', async () => ({ content: [] })),
    { name: 't', title: 'Title', inputSchema: { type: 'object' } },
    's__t_2',
  );
  t.equal(named.name, 's__t_2');
  t.equal(named.description, 'Title');
  const bare = new McpTool(new FakeTarget('s', async () => ({ content: [] })), { name: 't', inputSchema: { type: 'object' } });
  t.equal(bare.description, 'Tool "t" of the MCP server "s".');
});

t.test('run passes arguments, signal and progress to the target', async (t) => {
  const progress: Progress = { progress: 1, total: 4, message: 'cloning', progressToken: 1 } as Progress;
  const target = new FakeTarget('github', async (options) => {
    options.onProgress?.(progress);
    options.onProgress?.({ progress: 2 });
    options.onProgress?.({ progress: 3, total: 4 });
    return { content: [{ type: 'text', text: 'created #7' }] };
  });
  const tool = new McpTool(target, definition);
  const seen: string[] = [];
  const controller = new AbortController();
  const r = await tool.run(
    { title: 'x' },
    ctx(controller.signal, (s) => seen.push(s)),
  );
  t.same(r, { llmContent: 'created #7', display: { type: 'text', text: 'created #7' } });
  t.equal(target.calls[0].toolName, 'create_issue');
  t.same(target.calls[0].args, { title: 'x' });
  t.equal(target.calls[0].options.signal, controller.signal);
  t.same(seen, ['cloning (1/4)', 'Progress: 2', 'Progress: 3/4']);
  await tool.run({ title: 'x' }, ctx());
  t.equal(target.calls[1].options.onProgress, undefined, 'no progress requested without onLiveOutput');
});

t.test('run never throws: failures and cancellation become results', async (t) => {
  const failing = new McpTool(new FakeTarget('gh', async () => Promise.reject(new Error('MCP server "gh" is disconnected'))), definition);
  t.same(await failing.run({ title: 'x' }, ctx()), {
    isError: true,
    error: { type: 'mcp_call_failed', message: 'Call to MCP tool "create_issue" of server "gh" failed: MCP server "gh" is disconnected' },
  });
  // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the case under test: a server library rejecting with a non-Error
  const stringly = new McpTool(new FakeTarget('gh', async () => Promise.reject('bare string')), definition);
  t.match(await stringly.run({ title: 'x' }, ctx()), { error: { type: 'mcp_call_failed', message: /failed: bare string$/ } });

  const controller = new AbortController();
  const hanging = new McpTool(
    new FakeTarget(
      'gh',
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- like the MCP SDK: rejects with the signal's reason, as given
      (options) => new Promise((_, reject) => options.signal.addEventListener('abort', () => reject(options.signal.reason))),
    ),
    definition,
  );
  const pending = hanging.run({ title: 'x' }, ctx(controller.signal));
  controller.abort();
  t.same(await pending, {
    isError: true,
    error: { type: 'cancelled', message: 'Call to MCP tool "create_issue" of server "gh" was cancelled' },
  });

  const target = new FakeTarget('gh', async () => ({ content: [] }));
  const early = await new McpTool(target, definition).run({ title: 'x' }, ctx(AbortSignal.abort()));
  t.match(early, { isError: true, error: { type: 'cancelled', message: /before it started/ } });
  t.equal(target.calls.length, 0, 'an aborted call never reaches the server');
});

t.test('mapCallToolResult', async (t) => {
  const label = 'MCP tool "x" of server "s"';
  t.same(
    mapCallToolResult(
      {
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      label,
    ),
    {
      llmContent: 'a\nb',
      display: { type: 'text', text: 'a\nb' },
    },
  );
  const png = Buffer.alloc(1234).toString('base64');
  const mixed = mapCallToolResult(
    {
      content: [
        { type: 'image', mimeType: 'image/png', data: png },
        { type: 'audio', mimeType: 'audio/wav', data: Buffer.alloc(10).toString('base64') },
        { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt' },
        { type: 'resource', resource: { uri: 'file:///b.txt', text: 'inline text' } },
        { type: 'resource', resource: { uri: 'file:///c.bin', mimeType: 'application/zip', blob: Buffer.alloc(3).toString('base64') } },
        { type: 'hologram' },
        { type: 'text' },
      ],
    },
    label,
  );
  t.same(mixed, {
    llmContent:
      '[image/png, 1234 bytes]\n[audio/wav, 10 bytes]\n[resource link: a.txt <file:///a.txt>]\ninline text\n' +
      '[resource file:///c.bin, application/zip, 3 bytes]\n[hologram content]\n',
    display: {
      type: 'text',
      text:
        '[image/png, 1234 bytes]\n[audio/wav, 10 bytes]\n[resource link: a.txt <file:///a.txt>]\ninline text\n' +
        '[resource file:///c.bin, application/zip, 3 bytes]\n[hologram content]\n',
    },
  });
  t.same(mapCallToolResult({ content: [{ type: 'image', data: 'AAAA' }] }, label).isError, undefined);
  t.match(mapCallToolResult({ content: [{ type: 'image', data: 'AAAA' }] }, label), { llmContent: '[image, 3 bytes]' });

  t.same(mapCallToolResult({ content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } }, label), {
    llmContent: '{"n":1}',
    display: { type: 'structured', data: { n: 1 } },
  });
  t.same(mapCallToolResult({ content: [], structuredContent: { n: 2 } }, label), {
    llmContent: '{"n":2}',
    display: { type: 'structured', data: { n: 2 } },
  });
  t.same(mapCallToolResult({ content: [] }, label), { llmContent: '', display: { type: 'text', text: '' } });
  t.same(mapCallToolResult({}, label), { llmContent: '', display: { type: 'text', text: '' } });

  t.same(mapCallToolResult({ isError: true, content: [{ type: 'text', text: 'rate limited' }] }, label), {
    isError: true,
    error: { type: 'mcp_tool_error', message: 'rate limited' },
    llmContent: 'rate limited',
  });
  t.same(mapCallToolResult({ isError: true, content: [] }, label), {
    isError: true,
    error: { type: 'mcp_tool_error', message: 'MCP tool "x" of server "s" reported an error without a message' },
    llmContent: '',
  });
  t.same(mapCallToolResult({ toolResult: { legacy: true } }, label), {
    llmContent: '{"legacy":true}',
    display: { type: 'text', text: '{"legacy":true}' },
  });
});
