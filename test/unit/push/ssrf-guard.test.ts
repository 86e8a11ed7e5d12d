/**
 * checkPushUrl / classifyAddress: every blocked address class, odd IPv4 spellings the URL
 * parser normalises, IPv6 literals and embeddings, hostnames through an injected lookup
 * (no real DNS), and the PUSH_ALLOW_PRIVATE escape hatch.
 */
import t from 'tap';
import { checkPushUrl, classifyAddress, type LookupFn } from '../../../src/push/ssrf-guard.js';

const noLookup: LookupFn = async (host) => {
  throw new Error(`lookup(${host}) should not be called for a literal`);
};
const fakeDns =
  (table: Record<string, string[]>): LookupFn =>
  async (host) => {
    const addrs = table[host];
    if (addrs === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

t.test('classifyAddress: IPv4', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.1.2', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', undefined],
    ['192.168.1.1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['100.128.0.1', undefined],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['8.8.8.8', undefined],
    ['93.184.216.34', undefined],
  ];
  for (const [ip, cls] of cases) t.equal(classifyAddress(ip), cls, `${ip} → ${cls ?? 'public'}`);
});

t.test('classifyAddress: IPv6', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:8.8.8.8', undefined],
    ['64:ff9b::a00:1', 'private'],
    ['2002:c0a8:0101::1', 'private'],
    ['::127.0.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['2606:4700:4700::1111', undefined],
    ['2001:4860:4860::8888', undefined],
  ];
  for (const [ip, cls] of cases) t.equal(classifyAddress(ip), cls, `${ip} → ${cls ?? 'public'}`);
  t.throws(() => classifyAddress('example.com'), TypeError);
});

t.test('IP literals, including spellings the URL parser normalises', async (t) => {
  const opts = { allowPrivate: false, lookup: noLookup };
  const r = await checkPushUrl('http://127.0.0.1:9/x?token=s3cret', opts);
  t.same(r, {
    ok: false,
    addressClass: 'loopback',
    message:
      'pushNotificationConfig.url http://127.0.0.1:9/x resolves to 127.0.0.1, a loopback address; push to private networks is refused (the operator can allow it with PUSH_ALLOW_PRIVATE=1)',
  });
  t.notMatch(!r.ok && r.message, 's3cret', 'the query string is not echoed');
  for (const url of ['http://2130706433/', 'http://0x7f.1/', 'http://017700000001/', 'http://127.1/', 'http://0x7f000001/']) {
    const res = await checkPushUrl(url, opts);
    t.equal(!res.ok && res.addressClass, 'loopback', `${url} is 127.0.0.1`);
    t.match(!res.ok && res.message, 'resolves to 127.0.0.1, a loopback address');
  }
  const v6 = await checkPushUrl('http://[::ffff:127.0.0.1]:8080/hook', opts);
  t.equal(!v6.ok && v6.addressClass, 'loopback', 'IPv4-mapped IPv6');
  t.match(!v6.ok && v6.message, 'http://[::ffff:7f00:1]:8080/hook resolves to ::ffff:7f00:1, a loopback address');
  t.equal(((await checkPushUrl('http://[::1]/', opts)) as { addressClass?: string }).addressClass, 'loopback');
  t.equal(((await checkPushUrl('https://[fe80::1]/', opts)) as { addressClass?: string }).addressClass, 'link-local');
  t.equal(((await checkPushUrl('http://0.0.0.0:80/', opts)) as { addressClass?: string }).addressClass, 'unspecified');
  t.equal(((await checkPushUrl('http://[::]/', opts)) as { addressClass?: string }).addressClass, 'unspecified');
  t.match(await checkPushUrl('http://10.0.0.5/', opts), { ok: false, message: /10\.0\.0\.5, a private address/ });
  t.match(await checkPushUrl('http://100.64.1.1/', opts), { ok: false, message: /a carrier-grade NAT address/ });
  t.match(await checkPushUrl('http://224.0.0.1/', opts), { ok: false, message: /a multicast address/ });
  t.match(await checkPushUrl('http://255.255.255.255/', opts), { ok: false, message: /a broadcast address/ });
  const pub = await checkPushUrl('https://8.8.8.8/hook', opts);
  t.equal(pub.ok, true);
  t.same(pub.ok && pub.addresses, ['8.8.8.8']);
  t.equal(pub.ok && pub.url.href, 'https://8.8.8.8/hook');
});

t.test('cloud metadata is refused even when private networks are allowed', async (t) => {
  for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/', 'http://[::ffff:169.254.169.254]/']) {
    for (const allowPrivate of [false, true]) {
      const r = await checkPushUrl(url, { allowPrivate, lookup: noLookup });
      t.equal(!r.ok && r.addressClass, 'metadata', `${url} allowPrivate=${allowPrivate}`);
      t.match(!r.ok && r.message, /a cloud metadata address; cloud metadata endpoints are always refused/);
    }
  }
  for (const url of ['http://metadata.google.internal/computeMetadata/v1/', 'http://METADATA/', 'http://metadata.google.internal./']) {
    const r = await checkPushUrl(url, { allowPrivate: true, lookup: noLookup });
    t.equal(!r.ok && r.addressClass, 'metadata', `${url}: refused by name, before DNS`);
    t.match(!r.ok && r.message, 'names a cloud metadata host');
  }
});

t.test('hostnames: every resolved address must pass', async (t) => {
  const lookup = fakeDns({
    'hooks.example.com': ['93.184.216.34', '2606:2800:220:1::1'],
    'mixed.example.com': ['93.184.216.34', '192.168.1.10'],
    'rebind.example.com': ['::ffff:10.0.0.1'],
    'metadata-alias.example.com': ['169.254.169.254'],
    'empty.example.com': [],
  });
  const ok = await checkPushUrl('https://hooks.example.com/a2a', { allowPrivate: false, lookup });
  t.same(ok.ok && ok.addresses, ['93.184.216.34', '2606:2800:220:1::1']);
  t.same(await checkPushUrl('https://mixed.example.com/a2a', { allowPrivate: false, lookup }), {
    ok: false,
    addressClass: 'private',
    message:
      'pushNotificationConfig.url https://mixed.example.com/a2a resolves to 192.168.1.10, a private address; push to private networks is refused (the operator can allow it with PUSH_ALLOW_PRIVATE=1)',
  });
  t.match(await checkPushUrl('https://rebind.example.com/', { allowPrivate: false, lookup }), { ok: false, addressClass: 'private' });
  t.match(await checkPushUrl('https://metadata-alias.example.com/', { allowPrivate: true, lookup }), {
    ok: false,
    addressClass: 'metadata',
  });
  t.same(await checkPushUrl('https://nope.example.com/', { allowPrivate: false, lookup }), {
    ok: false,
    message: 'pushNotificationConfig.url host nope.example.com does not resolve (ENOTFOUND)',
  });
  t.match(await checkPushUrl('https://empty.example.com/', { allowPrivate: false, lookup }), { ok: false, message: /no addresses/ });
  // Registration accepts a name that does not resolve yet (no addresses to connect to: each
  // delivery checks again), but never a refused class, a refused name or a literal.
  const reg = { allowPrivate: false, lookup, acceptUnresolved: true };
  t.same(await checkPushUrl('https://nope.example.com/', reg), {
    ok: true,
    url: new URL('https://nope.example.com/'),
    addresses: [],
    unresolved: true,
  });
  t.strictSame(await checkPushUrl('https://empty.example.com/', reg), {
    ok: true,
    url: new URL('https://empty.example.com/'),
    addresses: [],
    unresolved: true,
  });
  t.match(await checkPushUrl('https://mixed.example.com/a2a', reg), { ok: false, addressClass: 'private' });
  t.match(await checkPushUrl('http://10.0.0.1/', reg), { ok: false, addressClass: 'private' });
  t.match(await checkPushUrl('http://metadata.google.internal/', reg), { ok: false, addressClass: 'metadata' });
  t.strictSame(await checkPushUrl('https://hooks.example.com/a2a', reg), {
    ok: true,
    url: new URL('https://hooks.example.com/a2a'),
    addresses: ['93.184.216.34', '2606:2800:220:1::1'],
  });
  const junk = await checkPushUrl('https://junk.example.com/', {
    allowPrivate: false,
    lookup: async () => [{ address: 'junk', family: 4 }],
  });
  t.match(junk, { ok: false, message: /not an IP address/ });
  t.match(await checkPushUrl('http://localhost:3000/', { allowPrivate: false, lookup: noLookup }), {
    ok: false,
    addressClass: 'loopback',
    message: /names localhost, a loopback host/,
  });
  t.match(await checkPushUrl('http://app.localhost/', { allowPrivate: false, lookup: noLookup }), { ok: false, addressClass: 'loopback' });
});

t.test('allowPrivate lets private classes through', async (t) => {
  const lookup = fakeDns({ localhost: ['127.0.0.1', '::1'], 'nas.lan': ['192.168.1.20'] });
  for (const url of ['http://127.0.0.1:9/x', 'http://[::1]/', 'http://10.0.0.1/', 'http://nas.lan/hook', 'http://localhost:8080/']) {
    const r = await checkPushUrl(url, { allowPrivate: true, lookup });
    t.equal(r.ok, true, `${url} allowed`);
  }
  const r = await checkPushUrl('http://localhost:8080/', { allowPrivate: true, lookup });
  t.same(r.ok && r.addresses, ['127.0.0.1', '::1']);
});

t.test('URL shape', async (t) => {
  const opts = { allowPrivate: false, lookup: noLookup };
  t.same(await checkPushUrl('not a url', opts), { ok: false, message: 'pushNotificationConfig.url is not a valid absolute URL' });
  t.same(await checkPushUrl('/relative/path', opts), { ok: false, message: 'pushNotificationConfig.url is not a valid absolute URL' });
  t.same(await checkPushUrl('ftp://8.8.8.8/x', opts), {
    ok: false,
    message: 'pushNotificationConfig.url must use http or https (got ftp:)',
  });
  t.same(await checkPushUrl('file:///etc/passwd', opts), {
    ok: false,
    message: 'pushNotificationConfig.url must use http or https (got file:)',
  });
  const cred = await checkPushUrl('https://user:hunter2@8.8.8.8/x', opts);
  t.match(cred, { ok: false, message: /must not contain credentials/ });
  t.notMatch(!cred.ok && cred.message, 'hunter2');
  t.match(await checkPushUrl('ftp://x/', { ...opts, field: 'url' }), { message: /^url must use http/ }, 'the field name is configurable');
});

t.test("purpose: 'mcp' words the private-network refusal for MCP servers; the checks are the same", async (t) => {
  const lookup = fakeDns({ 'mcp.internal': ['10.1.2.3'], 'tools.example.com': ['93.184.216.34'] });
  const mcp = { allowPrivate: false, lookup, field: 'mcpServers.files.url', purpose: 'mcp' as const };
  t.same(await checkPushUrl('http://mcp.internal:8080/mcp?key=s3cret', mcp), {
    ok: false,
    addressClass: 'private',
    message:
      'mcpServers.files.url http://mcp.internal:8080/mcp resolves to 10.1.2.3, a private address; connecting to MCP servers on private networks is refused (the operator can allow it with PUSH_ALLOW_PRIVATE=1)',
  });
  t.match(await checkPushUrl('http://localhost:3000/mcp', mcp), {
    ok: false,
    addressClass: 'loopback',
    message:
      /^mcpServers\.files\.url http:\/\/localhost:3000\/mcp names localhost, a loopback host \(RFC 6761\); connecting to MCP servers on private networks is refused/,
  });
  const meta = await checkPushUrl('http://169.254.169.254/', { ...mcp, allowPrivate: true });
  t.match(!meta.ok && meta.message, /cloud metadata endpoints are always refused$/, 'metadata wording does not depend on the purpose');
  t.equal((await checkPushUrl('http://mcp.internal/mcp', { ...mcp, allowPrivate: true })).ok, true, 'allowPrivate lifts it as for push');
  t.equal((await checkPushUrl('https://tools.example.com/mcp', mcp)).ok, true, 'a public MCP server passes');
  for (const purpose of [undefined, 'push' as const]) {
    const push = await checkPushUrl('http://10.0.0.5/', { allowPrivate: false, lookup: noLookup, purpose });
    t.match(!push.ok && push.message, /; push to private networks is refused \(/, `purpose ${purpose ?? 'absent'} → push wording`);
  }
});
