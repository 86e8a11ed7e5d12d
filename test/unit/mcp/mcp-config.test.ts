import t from 'tap';
import { isStdioConfig, parseMcpServers } from '../../../src/mcp/index.js';

const AT = 'mcp_servers';

function message(raw: unknown): string {
  const r = parseMcpServers(raw, AT);
  if (r.ok) throw new Error(`expected a failure for ${JSON.stringify(raw)}`);
  return r.message;
}

t.test('accepts stdio and HTTP servers in Gemini CLI shape', async (t) => {
  const r = parseMcpServers(
    {
      github: { command: 'npx', args: ['-y', 'server-github'], env: { GITHUB_TOKEN: 'x' }, cwd: 'tools', timeout: 5000 },
      web: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer t' }, timeout: 2500 },
      gem: { httpUrl: 'http://127.0.0.1:9000/mcp' },
      snake: { http_url: 'http://localhost/mcp' },
      'min-1_x': { command: 'server' },
    },
    AT,
  );
  t.same(r, {
    ok: true,
    value: {
      github: { command: 'npx', args: ['-y', 'server-github'], env: { GITHUB_TOKEN: 'x' }, cwd: 'tools', timeout: 5000 },
      web: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer t' }, timeout: 2500 },
      gem: { url: 'http://127.0.0.1:9000/mcp' },
      snake: { url: 'http://localhost/mcp' },
      'min-1_x': { command: 'server' },
    },
  });
  if (!r.ok) return;
  t.ok(isStdioConfig(r.value.github));
  t.notOk(isStdioConfig(r.value.web));
  t.same(parseMcpServers({}, AT), { ok: true, value: {} }, 'an empty map is fine');
});

t.test('the map itself', async (t) => {
  for (const raw of [null, [], 'x', 3]) {
    t.equal(message(raw), 'mcp_servers must be an object mapping server names to server configs');
  }
});

t.test('server names', async (t) => {
  t.equal(
    message({ 'my server': { command: 'x' } }),
    'mcp_servers["my server"]: server name "my server" may only contain letters, digits, "_" and "-"',
  );
  t.equal(message({ 'a.b': { command: 'x' } }), 'mcp_servers["a.b"]: server name "a.b" may only contain letters, digits, "_" and "-"');
  t.equal(message({ '': { command: 'x' } }), 'mcp_servers[""]: server name "" may only contain letters, digits, "_" and "-"');
  t.equal(
    message({ a__b: { command: 'x' } }),
    'mcp_servers.a__b: server name "a__b" must not contain "__" (it separates server and tool names)',
  );
  t.match(message({ __proto__x: { command: 'x' } }), /must not contain "__"/);
});

t.test('entry shape and transport choice', async (t) => {
  t.equal(message({ gh: null }), 'mcp_servers.gh must be an object with either command or url');
  t.equal(message({ gh: ['npx'] }), 'mcp_servers.gh must be an object with either command or url');
  t.equal(message({ gh: {} }), 'mcp_servers.gh must set either command (stdio server) or url/httpUrl (HTTP server)');
  t.equal(message({ gh: { command: 'x', url: 'http://h/mcp' } }), 'mcp_servers.gh must set exactly one of command and url, not both');
  t.equal(
    message({ gh: { command: 'x', httpUrl: 'http://h/mcp' } }),
    'mcp_servers.gh must set exactly one of command and httpUrl, not both',
  );
  t.equal(message({ gh: { url: 'http://h/a', httpUrl: 'http://h/b' } }), 'mcp_servers.gh must set only one of url, httpUrl');
  t.equal(message({ gh: { httpUrl: 'http://h/a', http_url: 'http://h/b' } }), 'mcp_servers.gh must set only one of httpUrl, http_url');
  t.equal(
    message({ gh: { command: 'x', trust: true } }),
    'mcp_servers.gh.trust is not supported (known keys: command, args, env, cwd, url, httpUrl, headers, timeout)',
  );
  t.match(message({ gh: { command: 'x', 'bad key': 1 } }), /^mcp_servers\.gh\["bad key"\] is not supported/);
});

t.test('stdio fields', async (t) => {
  t.equal(message({ github: { command: 42 } }), 'mcp_servers.github.command must be a non-empty string');
  t.equal(message({ github: { command: '  ' } }), 'mcp_servers.github.command must be a non-empty string');
  t.equal(message({ github: { command: 'x', args: 'a b' } }), 'mcp_servers.github.args must be an array of strings');
  t.equal(message({ github: { command: 'x', args: ['a', 2] } }), 'mcp_servers.github.args[1] must be a string');
  t.equal(message({ github: { command: 'x', env: ['A=1'] } }), 'mcp_servers.github.env must be an object whose values are strings');
  t.equal(message({ github: { command: 'x', env: { TOKEN: 1 } } }), 'mcp_servers.github.env.TOKEN must be a string');
  t.equal(message({ github: { command: 'x', env: { 'A B': true } } }), 'mcp_servers.github.env["A B"] must be a string');
  t.equal(message({ github: { command: 'x', cwd: '' } }), 'mcp_servers.github.cwd must be a non-empty string');
  t.equal(
    message({ github: { command: 'x', headers: { a: 'b' } } }),
    'mcp_servers.github.headers is only for HTTP servers; mcp_servers.github sets command, so it is a stdio server',
  );
});

t.test('HTTP fields', async (t) => {
  t.equal(message({ web: { url: 7 } }), 'mcp_servers.web.url must be a non-empty string');
  t.equal(message({ web: { url: 'not a url' } }), 'mcp_servers.web.url must be an absolute http:// or https:// URL, got "not a url"');
  t.equal(message({ web: { httpUrl: 'ftp://h/x' } }), 'mcp_servers.web.httpUrl must be an http:// or https:// URL, got "ftp://h/x"');
  t.equal(
    message({ web: { http_url: '/relative' } }),
    'mcp_servers.web.http_url must be an absolute http:// or https:// URL, got "/relative"',
  );
  t.equal(
    message({ web: { url: 'http://h/', headers: 'Bearer x' } }),
    'mcp_servers.web.headers must be an object whose values are strings',
  );
  t.equal(
    message({ web: { url: 'http://h/', headers: { Authorization: null } } }),
    'mcp_servers.web.headers.Authorization must be a string',
  );
  t.equal(
    message({ web: { url: 'http://h/', env: {} } }),
    'mcp_servers.web.env is only for stdio servers; mcp_servers.web sets url, so it is an HTTP server',
  );
  t.equal(
    message({ web: { httpUrl: 'http://h/', args: [] } }),
    'mcp_servers.web.args is only for stdio servers; mcp_servers.web sets httpUrl, so it is an HTTP server',
  );
});

t.test('timeout', async (t) => {
  for (const timeout of [0, -5, '100', Number.NaN, Number.POSITIVE_INFINITY, null]) {
    t.equal(message({ s: { command: 'x', timeout } }), 'mcp_servers.s.timeout must be a positive number of milliseconds', String(timeout));
    t.equal(
      message({ s: { url: 'http://h/', timeout } }),
      'mcp_servers.s.timeout must be a positive number of milliseconds',
      String(timeout),
    );
  }
});

t.test('the path prefix is the caller’s', async (t) => {
  const r = parseMcpServers({ gh: { command: 1 } }, 'settings.mcpServers');
  t.same(r, { ok: false, message: 'settings.mcpServers.gh.command must be a non-empty string' });
});
