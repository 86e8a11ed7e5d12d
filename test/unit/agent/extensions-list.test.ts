/**
 * `extensions list` shows what an extension is, not its secrets: beside the `env` and `headers`
 * values, the credentials in a URL (an install `source` cloned with a token, an MCP server URL
 * with a password) are hidden; everything else is as the original shows it.
 */
import t from 'tap';
import { extensionsAnswer, extensionsText } from '../../../src/agent/requests/extensions-command.js';
import { REDACTED } from '../../../src/lib/redact.js';

const ext = {
  name: 'gh',
  version: '1.0.0',
  path: '/srv/ext/gh',
  contextFiles: ['/srv/ext/gh/GEMINI.md'],
  installMetadata: { source: 'https://x-access-token:ghp_SECRET123456@github.com/o/gh.git', type: 'git', ref: 'main' },
  mcpServers: {
    api: { httpUrl: 'https://bot:hunter2SECRET@mcp.example.com/mcp', headers: { Authorization: 'Bearer tokSECRET' } },
    local: { command: 'node', args: ['server.js'], env: { TOKEN: 'envSECRET' } },
  },
};

t.test('no credential of an install source, a server URL, env or headers is listed', async (t) => {
  const shown = JSON.stringify(extensionsAnswer([ext]));
  t.notMatch(shown, /SECRET|hunter2/, 'no secret value in the legacy answer');
  t.match(extensionsAnswer([ext]).data, [
    {
      installMetadata: { source: `https://${REDACTED}:${REDACTED}@github.com/o/gh.git`, type: 'git', ref: 'main' },
      mcpServers: {
        api: { httpUrl: `https://${REDACTED}:${REDACTED}@mcp.example.com/mcp`, headers: { Authorization: REDACTED } },
        local: { command: 'node', args: ['server.js'], env: { TOKEN: REDACTED } },
      },
    },
  ]);
  t.equal((extensionsAnswer([ext]).data as unknown[]).length, 1, 'one extension, one entry');
  t.notMatch(extensionsText([ext], '/srv/ext'), /SECRET|hunter2/, 'nor in the text');
  const plain = { ...ext, installMetadata: { source: 'https://github.com/o/gh.git', type: 'git' } };
  t.match(
    extensionsAnswer([plain]).data,
    [{ installMetadata: { source: 'https://github.com/o/gh.git' } }],
    'a URL without credentials as written',
  );
});
