// Extra checks on a client certificate that the TLS layer has already verified against the CA
// (GRPC_CLIENT_TLS_SAN): the leaf must carry the DNS name as a subject alternative name, and when
// it restricts its extended key usage, client authentication must be among the uses — the same
// conditions as upstream's verification (x509 Verify with DNSName and ExtKeyUsageClientAuth).
import type { PeerCertificate } from 'node:tls';

const EKU_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const EKU_ANY = '2.5.29.37.0';

/** DNS names of the certificate's subjectAltName extension (lower case). */
export function dnsSubjectAltNames(cert: PeerCertificate): string[] {
  const san = cert.subjectaltname;
  if (typeof san !== 'string' || san === '') return [];
  const out: string[] = [];
  // Node renders the extension as `DNS:a, DNS:b, IP Address:…`; names with commas or quotes are
  // JSON-quoted, which never matches a plain DNS name and so never passes by accident.
  for (const part of san.split(', ')) {
    if (part.startsWith('DNS:')) out.push(part.slice(4).toLowerCase());
  }
  return out;
}

/** RFC 6125 matching: exact, or a `*.` wildcard standing for exactly one left-most label. */
export function dnsNameMatches(pattern: string, name: string): boolean {
  const p = pattern.toLowerCase().replace(/\.$/, '');
  const n = name.toLowerCase().replace(/\.$/, '');
  if (p === n) return true;
  if (!p.startsWith('*.')) return false;
  const dot = n.indexOf('.');
  return dot > 0 && n.slice(dot + 1) === p.slice(2) && p.slice(2).includes('.');
}

/**
 * Returns why the certificate is refused, or undefined when it is acceptable for client
 * authentication as `requiredSan`.
 */
export function clientCertificateProblem(cert: PeerCertificate | undefined, requiredSan: string): string | undefined {
  if (cert === undefined || Object.keys(cert).length === 0) return 'no client certificate';
  const eku = cert.ext_key_usage;
  if (Array.isArray(eku) && eku.length > 0 && !eku.includes(EKU_CLIENT_AUTH) && !eku.includes(EKU_ANY)) {
    return 'client certificate does not allow client authentication (extended key usage)';
  }
  const names = dnsSubjectAltNames(cert);
  if (!names.some((n) => dnsNameMatches(n, requiredSan))) {
    return `client certificate is not valid for ${requiredSan} (DNS names: ${names.length > 0 ? names.join(', ') : 'none'})`;
  }
  return undefined;
}
