//! Access tokens: issued, listed and revoked by the operator alone; checked on every request
//! of a front end that authenticates by bearer token.

use jiff::Timestamp;

use crate::address::Address;
use crate::error::{Error, Result};
use crate::name::Name;
use crate::token::{Token, hash_secret, id_of, secret_from};

use super::Mailroom;

/// A token just issued: its record, and the secret shown this once.
#[derive(Clone, Debug)]
pub struct Issued {
    pub token: Token,
    pub secret: String,
}

fn operator_only(me: &Address, what: &str) -> Result<()> {
    if me.is_human() {
        return Ok(());
    }
    Err(Error::Refused(format!(
        "{me} cannot {what}: a token lets its holder act as its address, so only the operator manages tokens; run it as HUMAN (--as HUMAN)"
    )))
}

impl Mailroom<'_> {
    /// Issues a token acting as `address`, named `name` when given, expiring at `expires` when
    /// given; `random` is the secret's 32 random bytes, which the front end draws.
    pub fn add_token(
        &self,
        me: &Address,
        address: &Address,
        name: Option<&str>,
        expires: Option<Timestamp>,
        random: &[u8; 32],
    ) -> Result<Issued> {
        operator_only(me, "add a token")?;
        let name = match name {
            Some(n) => Some(
                Name::parse(n)
                    .map_err(|source| Error::InvalidName {
                        what: "token name",
                        input: n.to_owned(),
                        source,
                    })?
                    .as_str()
                    .to_owned(),
            ),
            None => None,
        };
        let created = self.now();
        if let Some(e) = expires
            && e <= created
        {
            return Err(Error::Invalid(format!(
                "the expiry {e} is not in the future: give a duration such as 30d"
            )));
        }
        let secret = secret_from(random);
        let hash = hash_secret(&secret);
        let token = Token {
            id: id_of(&hash),
            name,
            address: address.clone(),
            hash,
            created,
            expires,
        };
        if !self.store().add_token(&token)? {
            return Err(Error::Conflict(match &token.name {
                Some(n) => format!("a token named '{n}' exists already: choose another name"),
                None => format!("a token with the id {} exists already", token.id),
            }));
        }
        Ok(Issued { token, secret })
    }

    /// Every token (never a secret: the store has none).
    pub fn tokens(&self, me: &Address) -> Result<Vec<Token>> {
        operator_only(me, "list tokens")?;
        self.store().tokens()
    }

    /// Revokes the token whose id, else whose name, is `which`; it stops authenticating at
    /// once.
    pub fn revoke_token(&self, me: &Address, which: &str) -> Result<Token> {
        operator_only(me, "revoke a token")?;
        let which = which.trim();
        let all = self.store().tokens()?;
        let found = all
            .iter()
            .find(|t| t.id.eq_ignore_ascii_case(which))
            .or_else(|| {
                all.iter().find(|t| {
                    t.name
                        .as_deref()
                        .is_some_and(|n| n.eq_ignore_ascii_case(which))
                })
            });
        let Some(token) = found else {
            return Err(Error::NotFound(format!(
                "no token has the id or name '{which}' (token list shows them)"
            )));
        };
        self.store().remove_token(&token.id)?;
        Ok(token.clone())
    }

    /// The token `secret` is, while it is live: `None` for an unknown, revoked or expired one.
    /// Read from the store on every call, so a revocation counts from the next request.
    pub fn authenticate(&self, secret: &str) -> Result<Option<Token>> {
        let now = (self.clock)();
        Ok(self
            .store()
            .token_by_hash(&hash_secret(secret.trim()))?
            .filter(|t| t.live_at(now)))
    }
}
