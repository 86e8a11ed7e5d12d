/**
 * Preloaded (`node --import`) into a server the bench runs that binds every interface by
 * itself (gemini-cli's a2a-server calls `listen(port)`): every TCP listen of the process is
 * bound to 127.0.0.1, whatever host it asked for, so nothing off this machine can reach it.
 */
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const [first] = args;
  if (first !== null && typeof first === 'object' && !Array.isArray(first)) {
    if (first.path === undefined) args[0] = { ...first, host: '127.0.0.1' };
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, cb]): drop a given host, put loopback in its place.
    const rest = args.slice(1);
    if (typeof rest[0] === 'string') rest.shift();
    args = [Number(first), '127.0.0.1', ...rest];
  }
  return listen.apply(this, args);
};
