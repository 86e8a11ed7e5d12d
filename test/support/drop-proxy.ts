/**
 * A TCP proxy in front of a test server that can break a connection mid-stream: it cuts the
 * response after a given SSE frame (and a few bytes of the next one), as a lost network does;
 * or refuses every new connection, as a server that is down does.
 */
import net from 'node:net';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface DropProxy {
  url: string;
  /** Cuts the first response that sends the frame `id: <frameId>`, `extra` bytes after that frame. */
  cutAfter(frameId: number, extra?: number): Promise<void>;
  /** Refuses (closes at once) every new connection while true. */
  refuse(on: boolean): void;
  /** How many connections were cut. */
  cuts: number;
}

export async function dropProxy(t: Teardown, target: string): Promise<DropProxy> {
  const { hostname, port } = new URL(target);
  let plan: { frameId: number; extra: number; done: () => void } | undefined;
  let refusing = false;
  const sockets = new Set<net.Socket>();
  const proxy: DropProxy = {
    url: '',
    cuts: 0,
    cutAfter(frameId, extra = 12) {
      return new Promise((resolve) => (plan = { frameId, extra, done: resolve }));
    },
    refuse(on) {
      refusing = on;
    },
  };
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(port), hostname);
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    let seen = '';
    client.on('data', (chunk) => upstream.write(chunk));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    upstream.on('data', (chunk: Buffer) => {
      const before = seen.length;
      seen += chunk.toString('latin1');
      const cut = plan !== undefined ? cutIndex(seen, plan.frameId, plan.extra) : undefined;
      if (cut === undefined || plan === undefined) return void client.write(chunk);
      client.write(chunk.subarray(0, Math.max(0, cut - before)), () => {
        client.destroy();
        upstream.destroy();
      });
      proxy.cuts++;
      const { done } = plan;
      plan = undefined;
      done();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  proxy.url = `http://127.0.0.1:${address.port}/`;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return proxy;
}

/** Where to cut `text` (an HTTP response so far): `extra` bytes after the end of frame `frameId`, once that frame is whole. */
function cutIndex(text: string, frameId: number, extra: number): number | undefined {
  const start = text.indexOf(`id: ${frameId}\n`);
  if (start < 0) return undefined;
  const end = text.indexOf('\n\n', start);
  if (end < 0) return undefined;
  const cut = end + 2 + extra;
  return cut <= text.length ? cut : undefined;
}
