import { createHash, randomBytes } from 'node:crypto';

/**
 * Proof Key for Code Exchange (RFC 7636), method S256: the login sends the challenge with the
 * authorize request and the verifier with the code exchange, so a code intercepted on its way to
 * the loopback listener is useless to whoever took it.
 */
export interface PkcePair {
  /** 43 characters of base64url (32 random bytes); sent only to the token endpoint. */
  verifier: string;
  /** base64url(SHA-256(verifier)); sent with the authorize request. */
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
