//! Access tokens: one identity each, for front ends that authenticate a caller by a bearer
//! secret (the MCP server over HTTP). A store keeps only a token's SHA-256 hash, never the
//! secret, so what it holds cannot be turned back into a working token.

use jiff::Timestamp;
use sha2::{Digest, Sha256};

use crate::address::Address;
use crate::error::Result;

/// What every secret starts with, so a leaked one is recognisable in a log or a scan.
pub const SECRET_PREFIX: &str = "mailroom_";

/// One token as a store keeps it: who it speaks as, and the hash of its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// Short and public: what `token list` shows and `token revoke` takes (12 hex digits).
    pub id: String,
    /// The operator's label, unique among tokens when given (one line, a name's characters).
    pub name: Option<String>,
    /// The identity a caller presenting this token acts as.
    pub address: Address,
    /// The SHA-256 of the secret, 64 lower-case hex digits.
    pub hash: String,
    pub created: Timestamp,
    /// After this instant the token no longer authenticates.
    pub expires: Option<Timestamp>,
}

impl Token {
    /// Whether the token still authenticates at `now`.
    pub fn live_at(&self, now: Timestamp) -> bool {
        self.expires.is_none_or(|e| now < e)
    }
}

/// The hash a store keeps for `secret`.
pub fn hash_secret(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// The secret made of 32 random bytes (the front end draws them: the core reads no
/// randomness of its own).
pub fn secret_from(random: &[u8; 32]) -> String {
    format!("{SECRET_PREFIX}{}", hex(random))
}

/// The public id of the token whose secret hashes to `hash`: derived from the hash by hashing
/// it again, so the id says nothing of the secret and is fixed once the secret is.
pub fn id_of(hash: &str) -> String {
    let mut id = hex(&Sha256::digest(format!("id:{hash}").as_bytes()));
    id.truncate(12);
    id
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Where a store keeps tokens: the fifth role. Only the operator's operations reach it (the
/// core checks), and a strict-mode database role of an agent cannot read it at all.
pub trait Tokens {
    /// Adds `token`: `Ok(false)` (and nothing written) when its id, or its name when it has
    /// one, is already taken.
    fn add_token(&self, token: &Token) -> Result<bool>;

    /// Every token, sorted by creation date then id.
    fn tokens(&self) -> Result<Vec<Token>>;

    /// The token whose secret hashes to `hash`, if any (expired ones too: the caller decides).
    fn token_by_hash(&self, hash: &str) -> Result<Option<Token>>;

    /// Removes the token `id`: `Ok(false)` when there was none.
    fn remove_token(&self, id: &str) -> Result<bool>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_sha256_hex_and_ids_are_short() {
        assert_eq!(
            hash_secret("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let secret = secret_from(&[7; 32]);
        assert!(secret.starts_with(SECRET_PREFIX));
        assert_eq!(secret.len(), SECRET_PREFIX.len() + 64);
        let id = id_of(&hash_secret(&secret));
        assert_eq!(id.len(), 12);
        assert!(!hash_secret(&secret).starts_with(&id));
    }
}
