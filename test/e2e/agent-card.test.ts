/**
 * The agent card over HTTP: one document that serves v0.3 clients and lets v1.0 clients find
 * their interfaces, the v1.0 form under `A2A-Version: 1.0`, and HTTP caching (Cache-Control,
 * ETag, Last-Modified, 304).
 */
import t from 'tap';
import { AgentCard } from '@a2a-js/sdk';
import { buildServer } from '../support/server.js';
import { DEVTOOL_EXTENSION_URI } from '../../src/protocol/extension.js';

t.test('without a version header: the v0.3 card, with v1.0 supportedInterfaces', async (t) => {
  const { app } = await buildServer(t);
  const res = await app.inject({ method: 'GET', url: '/.well-known/agent-card.json' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  const card = res.json();
  t.equal(card.protocolVersion, '0.3.0');
  t.match(card.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  t.equal(card.preferredTransport, 'JSONRPC');
  t.match(card.capabilities.extensions, [{ uri: DEVTOOL_EXTENSION_URI, required: true }]);
  t.equal(card.capabilities.extensions.length, 1, 'the development-tool extension only');
  t.ok(Array.isArray(card.supportedInterfaces) && card.supportedInterfaces.length > 0, 'supportedInterfaces is there');
  t.match(card.supportedInterfaces, [{ url: card.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
  const v1 = AgentCard.fromJSON(card);
  t.equal(v1.supportedInterfaces[0]?.url, card.url, 'a v1.0 reader of this card finds the JSON-RPC interface');
  const legacy = await app.inject({ method: 'GET', url: '/.well-known/agent.json' });
  t.same(legacy.json(), card, 'the pre-0.3 location serves the same card');
});

t.test('A2A-Version: 1.0 gets the v1.0 form', async (t) => {
  const { app } = await buildServer(t);
  const res = await app.inject({ method: 'GET', url: '/.well-known/agent-card.json', headers: { 'a2a-version': '1.0' } });
  const card = res.json();
  t.equal(card.protocolVersion, undefined);
  t.equal(card.url, undefined);
  t.match(card.supportedInterfaces, [{ protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]);
  t.match(card.capabilities, { streaming: true, pushNotifications: true });
});

t.test('caching: max-age, a strong ETag per form, Last-Modified, 304', async (t) => {
  const { app } = await buildServer(t);
  const get = (headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: '/.well-known/agent-card.json', headers });
  const first = await get();
  const etag = String(first.headers.etag);
  const lastModified = String(first.headers['last-modified']);
  t.match(first.headers['cache-control'], /^public, max-age=\d+$/);
  t.match(etag, /^"[A-Za-z0-9_-]+"$/, 'a strong ETag');
  t.ok(!Number.isNaN(Date.parse(lastModified)), 'Last-Modified is an HTTP date');
  t.equal(first.headers.vary, 'A2A-Version', 'the header picks the form, so caches key on it');
  t.equal((await get()).headers.etag, etag, 'stable across requests');
  const v1 = await get({ 'a2a-version': '1.0' });
  t.not(v1.headers.etag, etag, 'the v1.0 form has its own ETag');

  const cached = await get({ 'if-none-match': etag });
  t.equal(cached.statusCode, 304);
  t.equal(cached.body, '', 'no body');
  t.equal(cached.headers.etag, etag);
  t.equal((await get({ 'if-none-match': `"other", ${etag}` })).statusCode, 304, 'one of a list');
  t.equal((await get({ 'if-none-match': `W/${etag}` })).statusCode, 304, 'weak comparison');
  t.equal((await get({ 'if-none-match': '*' })).statusCode, 304);
  t.equal((await get({ 'if-none-match': '"stale"' })).statusCode, 200, 'a stale tag gets the card');
  t.equal((await get({ 'if-none-match': etag, 'a2a-version': '1.0' })).statusCode, 200, 'the v0.3 tag does not match the v1.0 form');
  t.equal((await get({ 'if-modified-since': lastModified })).statusCode, 304, 'If-Modified-Since the same date');
  t.equal((await get({ 'if-modified-since': new Date(Date.parse(lastModified) - 60_000).toUTCString() })).statusCode, 200, 'older');
  t.equal((await get({ 'if-modified-since': 'not a date' })).statusCode, 200, 'an unreadable date is ignored');
  t.equal((await get({ 'if-none-match': '"stale"', 'if-modified-since': lastModified })).statusCode, 200, 'If-None-Match wins');
});

t.test('Last-Modified moves only when the card changes, not when an equal card is built again', async (t) => {
  const { app } = await buildServer(t);
  const get = () => app.inject({ method: 'GET', url: '/.well-known/agent-card.json' });
  const first = await get();
  await new Promise((resolve) => setTimeout(resolve, 1_100)); // past a second boundary: HTTP dates have whole seconds
  const again = await get();
  t.equal(again.headers.etag, first.headers.etag);
  t.equal(again.headers['last-modified'], first.headers['last-modified'], 'the same card keeps its date');
  const lastModified = String(first.headers['last-modified']);
  const cached = await app.inject({ method: 'GET', url: '/.well-known/agent-card.json', headers: { 'if-modified-since': lastModified } });
  t.equal(cached.statusCode, 304, 'so If-Modified-Since with that date is still current');
});
