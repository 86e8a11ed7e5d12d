/**
 * Refuses push-notification URLs (and client-given MCP server URLs, `purpose: 'mcp'`) that
 * would make this server call into its own network (SSRF): loopback, private, link-local,
 * cloud metadata and other non-public addresses.
 *
 * The URL is parsed with the WHATWG parser, which already normalises odd IPv4 spellings
 * (`2130706433`, `0x7f.1`, `017700000001`, `127.1` all become `127.0.0.1`), so only dotted
 * quads and bracketed IPv6 reach the classifier. Hostnames are resolved and EVERY address
 * must pass: one private answer among public ones is enough to refuse.
 *
 * The check is only as good as the connection that follows: the sender should connect to
 * the returned `addresses` (not resolve the name again), or DNS rebinding can swap them.
 */
import { promises as dns } from 'node:dns';
import net from 'node:net';

export type AddressClass =
  'loopback' | 'private' | 'link-local' | 'metadata' | 'unspecified' | 'carrier-grade NAT' | 'multicast' | 'broadcast' | 'reserved';

const PHRASE: Record<AddressClass, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  'link-local': 'a link-local address',
  metadata: 'a cloud metadata address',
  unspecified: 'an unspecified address',
  'carrier-grade NAT': 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  reserved: 'a reserved address',
};

interface Range {
  base: bigint;
  bits: number;
  cls: AddressClass;
}

function v4(s: string): bigint {
  return s.split('.').reduce((n, octet) => (n << 8n) | BigInt(Number(octet)), 0n);
}

/** Expands any valid IPv6 text (with `::`, an IPv4 tail, or a zone) to a 128-bit number. */
function v6(s: string): bigint {
  let text = s.replace(/%.*$/, '');
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const n = v4(tail[0]);
    text = `${text.slice(0, tail.index)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const zeros = Array.from({ length: 8 - left.length - right.length }, () => '0');
  const groups = rest === undefined ? left : [...left, ...zeros, ...right];
  return groups.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n);
}

const bySpecificity = (ranges: Range[]) => ranges.sort((a, b) => b.bits - a.bits);
/** `address/bits`, as written in the tables below (always with a prefix length). */
function cidrParts(cidr: string): [string, number] {
  const slash = cidr.indexOf('/');
  return [cidr.slice(0, slash), Number(cidr.slice(slash + 1))];
}
const r4 = (cidr: string, cls: AddressClass): Range => {
  const [ip, bits] = cidrParts(cidr);
  return { base: v4(ip), bits, cls };
};
const r6 = (cidr: string, cls: AddressClass): Range => {
  const [ip, bits] = cidrParts(cidr);
  return { base: v6(ip), bits, cls };
};

// IANA IPv4 Special-Purpose Address Registry (RFC 6890), plus cloud metadata endpoints.
const V4_RANGES = bySpecificity([
  r4('0.0.0.0/8', 'unspecified'),
  r4('10.0.0.0/8', 'private'),
  r4('100.64.0.0/10', 'carrier-grade NAT'),
  r4('100.100.100.200/32', 'metadata'), // Alibaba Cloud
  r4('127.0.0.0/8', 'loopback'),
  r4('169.254.0.0/16', 'link-local'),
  r4('169.254.169.254/32', 'metadata'), // AWS, GCP, Azure, OCI, …
  r4('169.254.170.2/32', 'metadata'), // AWS ECS task metadata
  r4('172.16.0.0/12', 'private'),
  r4('192.0.0.0/24', 'reserved'),
  r4('192.0.2.0/24', 'reserved'),
  r4('192.88.99.0/24', 'reserved'),
  r4('192.168.0.0/16', 'private'),
  r4('198.18.0.0/15', 'reserved'),
  r4('198.51.100.0/24', 'reserved'),
  r4('203.0.113.0/24', 'reserved'),
  r4('224.0.0.0/4', 'multicast'),
  r4('240.0.0.0/4', 'reserved'),
  r4('255.255.255.255/32', 'broadcast'),
]);

// IANA IPv6 Special-Purpose Address Registry; anything outside 2000::/3 is refused below.
const V6_RANGES = bySpecificity([
  r6('::/128', 'unspecified'),
  r6('::1/128', 'loopback'),
  r6('::/96', 'reserved'), // IPv4-compatible (deprecated, RFC 4291 §2.5.5.1)
  r6('64:ff9b:1::/48', 'private'), // local-use NAT64 (RFC 8215)
  r6('100::/64', 'reserved'), // discard-only
  r6('2001::/23', 'reserved'), // IETF protocol assignments (incl. Teredo)
  r6('2001:db8::/32', 'reserved'), // documentation
  r6('fc00::/7', 'private'), // unique local
  r6('fd00:ec2::254/128', 'metadata'), // AWS IPv6 metadata
  r6('fe80::/10', 'link-local'),
  r6('fec0::/10', 'private'), // site-local (deprecated)
  r6('ff00::/8', 'multicast'),
]);

function match(n: bigint, ranges: Range[], width: number): AddressClass | undefined {
  for (const r of ranges) {
    const shift = BigInt(width - r.bits);
    if (n >> shift === r.base >> shift) return r.cls;
  }
  return undefined;
}

const within = (n: bigint, cidr: string) => match(n, [r6(cidr, 'reserved')], 128) !== undefined;

/** The IPv4 address an IPv6 address stands for, if it embeds one (mapped, NAT64, 6to4). */
function embeddedV4(n: bigint): bigint | undefined {
  if (within(n, '::ffff:0:0/96') || within(n, '64:ff9b::/96')) return n & 0xffffffffn;
  if (within(n, '2002::/16')) return (n >> 80n) & 0xffffffffn;
  return undefined;
}

/**
 * The blocked class of an IP address, or undefined for a public unicast address.
 * Accepts dotted IPv4 and IPv6 (optionally bracketed, with a zone). Throws TypeError otherwise.
 */
export function classifyAddress(ip: string): AddressClass | undefined {
  const text = ip.replace(/^\[(.*)\]$/, '$1');
  if (net.isIPv4(text)) return match(v4(text), V4_RANGES, 32);
  if (!net.isIPv6(text.replace(/%.*$/, ''))) throw new TypeError(`not an IP address: ${JSON.stringify(ip)}`);
  const n = v6(text);
  const mapped = embeddedV4(n);
  if (mapped !== undefined) return match(mapped, V4_RANGES, 32);
  return match(n, V6_RANGES, 128) ?? (within(n, '2000::/3') ? undefined : 'reserved');
}

/** Names that reach a metadata service without DNS saying so. */
const METADATA_HOSTS = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

export type LookupFn = (host: string) => Promise<Array<{ address: string; family: number }>>;

export interface PushUrlCheckOptions {
  /** PUSH_ALLOW_PRIVATE: lifts every class except `metadata`. */
  allowPrivate: boolean;
  /** DNS resolver; default dns.promises.lookup with `all: true`. Tests inject a fake. */
  lookup?: LookupFn;
  /** Field name in messages. Default `pushNotificationConfig.url`. */
  field?: string;
  /**
   * What the URL is for, named in the refusal: `push` (default) refuses "push to private networks";
   * `mcp` (a client-given MCP server URL) refuses "connecting to MCP servers on private networks".
   */
  purpose?: UrlPurpose;
  /**
   * Registration only: a host name that does not resolve NOW is accepted (`unresolved: true`,
   * no addresses), since a receiver's name may resolve later (or only where deliveries happen).
   * Nothing connects on this answer: each delivery checks again and pins what it then resolves
   * to. An IP literal, a refused name, or a name resolving to a refused class is still refused.
   */
  acceptUnresolved?: boolean;
}

/** What a checked URL will be used for; only the wording of refusals depends on it. */
export type UrlPurpose = 'push' | 'mcp';

const PRIVATE_REFUSAL: Record<UrlPurpose, string> = {
  push: 'push to private networks is refused',
  mcp: 'connecting to MCP servers on private networks is refused',
};

export type PushUrlCheck =
  { ok: true; url: URL; addresses: string[]; unresolved?: boolean } | { ok: false; message: string; addressClass?: AddressClass };

const defaultLookup: LookupFn = (host) => dns.lookup(host, { all: true, verbatim: true });

/**
 * Checks a push URL before it is stored and again before each delivery (and, with
 * `purpose: 'mcp'`, a client-given MCP server URL before connecting). Never throws.
 */
export async function checkPushUrl(raw: string, opts: PushUrlCheckOptions): Promise<PushUrlCheck> {
  const field = opts.field ?? 'pushNotificationConfig.url';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // Not echoed: an unparsable string may still carry a secret.
    return { ok: false, message: `${field} is not a valid absolute URL` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { ok: false, message: `${field} must use http or https (got ${url.protocol.slice(0, 20)})` };
  }
  if (url.username !== '' || url.password !== '') {
    return { ok: false, message: `${field} must not contain credentials (user:password@); use the authentication field` };
  }
  // Query and fragment left out of messages: they often carry tokens.
  const shown = `${url.protocol}//${url.host}${url.pathname}`;
  const host = url.hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
  const refuse = (what: string, cls: AddressClass) => ({
    ok: false as const,
    addressClass: cls,
    message:
      cls === 'metadata'
        ? `${field} ${shown} ${what}; cloud metadata endpoints are always refused`
        : `${field} ${shown} ${what}; ${PRIVATE_REFUSAL[opts.purpose ?? 'push']} (the operator can allow it with PUSH_ALLOW_PRIVATE=1)`,
  });

  if (METADATA_HOSTS.has(host)) return refuse('names a cloud metadata host', 'metadata');
  if ((host === 'localhost' || host.endsWith('.localhost')) && !opts.allowPrivate) {
    return refuse(`names ${host}, a loopback host (RFC 6761)`, 'loopback');
  }

  let addresses: string[];
  if (net.isIP(host) !== 0) {
    addresses = [host];
  } else {
    try {
      addresses = [...new Set((await (opts.lookup ?? defaultLookup)(host)).map((a) => a.address))];
    } catch (err) {
      if (opts.acceptUnresolved) return { ok: true, url, addresses: [], unresolved: true };
      const code = (err as NodeJS.ErrnoException).code ?? 'lookup failed';
      return { ok: false, message: `${field} host ${host} does not resolve (${code})` };
    }
    if (addresses.length === 0) {
      if (opts.acceptUnresolved) return { ok: true, url, addresses: [], unresolved: true };
      return { ok: false, message: `${field} host ${host} does not resolve (no addresses)` };
    }
  }

  for (const address of addresses) {
    let cls: AddressClass | undefined;
    try {
      cls = classifyAddress(address);
    } catch {
      return { ok: false, message: `${field} host ${host} resolved to something that is not an IP address` };
    }
    if (cls !== undefined && (cls === 'metadata' || !opts.allowPrivate)) {
      return refuse(`resolves to ${address}, ${PHRASE[cls]}`, cls);
    }
  }
  return { ok: true, url, addresses };
}
