//! The `Tokens` role: the `tokens` table (migration 0010), which only the tables' owner
//! reaches.

use mailroom_core::token::{Token, Tokens};
use mailroom_core::{Address, Result};
use postgres::Row;
use postgres::types::Type;

use crate::PgStore;

const COLUMNS: &str = "id, name, address, hash, created, expires";

fn token_of(row: &Row) -> Result<Token> {
    let bad = |what: &str, v: &str| {
        mailroom_core::Error::store(
            "read a token",
            format!("the token row has {what} '{v}', which does not read"),
        )
    };
    let address: String = row.get(2);
    let created: String = row.get(4);
    let expires: Option<String> = row.get(5);
    Ok(Token {
        id: row.get(0),
        name: row.get(1),
        address: Address::parse_canonical(&address).map_err(|_| bad("the address", &address))?,
        hash: row.get(3),
        created: created.parse().map_err(|_| bad("the date", &created))?,
        expires: match expires {
            Some(e) => Some(e.parse().map_err(|_| bad("the expiry", &e))?),
            None => None,
        },
    })
}

impl Tokens for PgStore {
    fn add_token(&self, token: &Token) -> Result<bool> {
        let address = token.address.to_string();
        let created = token.created.to_string();
        let expires = token.expires.map(|e| e.to_string());
        let n = self.write("add a token", |tx| {
            tx.execute_typed(
                "INSERT INTO tokens (id, name, address, hash, created, expires) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                &[
                    (&token.id, Type::TEXT),
                    (&token.name, Type::TEXT),
                    (&address, Type::TEXT),
                    (&token.hash, Type::TEXT),
                    (&created, Type::TEXT),
                    (&expires, Type::TEXT),
                ],
            )
        })?;
        Ok(n == 1)
    }

    fn tokens(&self) -> Result<Vec<Token>> {
        let rows = self.read("list tokens", |c| {
            c.query_typed(
                &format!("SELECT {COLUMNS} FROM tokens ORDER BY created, id"),
                &[],
            )
        })?;
        rows.iter().map(token_of).collect()
    }

    fn token_by_hash(&self, hash: &str) -> Result<Option<Token>> {
        let hash = hash.to_ascii_lowercase();
        let row = self.read("look up a token", |c| {
            c.query_typed_opt(
                &format!("SELECT {COLUMNS} FROM tokens WHERE hash = $1"),
                &[(&hash, Type::TEXT)],
            )
        })?;
        row.as_ref().map(token_of).transpose()
    }

    fn remove_token(&self, id: &str) -> Result<bool> {
        let n = self.write("revoke a token", |tx| {
            tx.execute_typed("DELETE FROM tokens WHERE id = $1", &[(&id, Type::TEXT)])
        })?;
        Ok(n == 1)
    }
}
