import { createHash, randomBytes } from 'node:crypto';

/** PKCE (RFC 7636), S256: a code intercepted on its way to the loopback listener is useless without the verifier. */
export interface PkcePair {
  /** 32 random bytes; sent only to the token endpoint. */
  verifier: string;
  challenge: string;
}

export function createPkcePair(): PkcePair {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: pkceChallenge(verifier) };
}

/** The S256 challenge of a verifier. */
export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}
