//! `token add ADDRESS [--name N] [--expires DUR]`, `token list`, `token revoke ID|NAME`: the
//! operator's access tokens, one identity each (for `mcp --listen`). The secret is printed
//! once, by `add`; the store keeps only its hash.

use anyhow::Result;
use jiff::{SignedDuration, Timestamp};
use mailroom_core::{Address, AddressSpec, Error, Token};
use serde_json::{Value, json};

use crate::cli::TokenAction;
use crate::context::Ctx;
use crate::output::{self, table, when};

/// The longest life a token is given: ten years.
const MAX_LIFE_DAYS: i64 = 3660;

pub fn token(ctx: &mut Ctx, action: Option<TokenAction>) -> Result<()> {
    let me = ctx.me()?;
    match action.unwrap_or(TokenAction::List) {
        TokenAction::Add {
            address,
            name,
            expires,
        } => add(ctx, &me, &address, name.as_deref(), expires.as_deref()),
        TokenAction::List => list(ctx, &me),
        TokenAction::Revoke { token } => {
            let revoked = ctx.mailroom().revoke_token(&me, &token)?;
            if ctx.json {
                output::print_json(&json!({"revoked": token_json(&revoked)}));
            } else {
                crate::outln!(
                    "revoked token {}{} for {}",
                    revoked.id,
                    revoked
                        .name
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default(),
                    revoked.address
                );
            }
            Ok(())
        }
    }
}

fn add(
    ctx: &mut Ctx,
    me: &Address,
    address: &str,
    name: Option<&str>,
    expires: Option<&str>,
) -> Result<()> {
    let address = full_address(address)?;
    let expires = match expires {
        Some(e) => Some(Timestamp::now() + life(e)?),
        None => None,
    };
    let mut random = [0u8; 32];
    getrandom::fill(&mut random)
        .map_err(|e| Error::store("draw a token's secret", std::io::Error::other(e)))?;
    let issued = ctx
        .mailroom()
        .add_token(me, &address, name, expires, &random)?;
    if ctx.json {
        output::print_json(&json!({
            "token": issued.secret,
            "id": issued.token.id,
            "address": issued.token.address.to_string(),
            "expires": issued.token.expires.map(|e| e.to_string()),
        }));
    } else {
        crate::outln!("{}", issued.secret);
        crate::errln!(
            "token {} acts as {}{}; it is shown this once: keep it in an environment variable, not in a file",
            issued.token.id,
            issued.token.address,
            issued
                .token
                .expires
                .map(|e| format!(" until {}", when(e)))
                .unwrap_or_default()
        );
    }
    Ok(())
}

fn list(ctx: &mut Ctx, me: &Address) -> Result<()> {
    let tokens = ctx.mailroom().tokens(me)?;
    if ctx.json {
        output::print_json(&json!({"tokens": tokens.iter().map(token_json).collect::<Vec<_>>()}));
        return Ok(());
    }
    if tokens.is_empty() {
        crate::outln!("No tokens; mailroom --as HUMAN token add ADDRESS issues one.");
        return Ok(());
    }
    let now = Timestamp::now();
    let mut rows = vec![vec![
        "ID".into(),
        "NAME".into(),
        "ADDRESS".into(),
        "CREATED".into(),
        "EXPIRES".into(),
    ]];
    for t in &tokens {
        rows.push(vec![
            t.id.clone(),
            t.name.clone().unwrap_or_else(|| "-".into()),
            t.address.to_string(),
            when(t.created),
            match t.expires {
                Some(e) if !t.live_at(now) => format!("expired {}", when(e)),
                Some(e) => when(e),
                None => "never".into(),
            },
        ]);
    }
    crate::out!("{}", table(&rows));
    Ok(())
}

/// A token as listed: never its secret (no store has it), nor its hash.
fn token_json(t: &Token) -> Value {
    json!({
        "id": t.id,
        "name": t.name,
        "address": t.address.to_string(),
        "created": t.created.to_string(),
        "expires": t.expires.map(|e| e.to_string()),
    })
}

/// `HUMAN` or `handle@project`: a token acts for one mailbox, named in full.
fn full_address(address: &str) -> Result<Address> {
    let spec = AddressSpec::parse(address).map_err(|source| Error::InvalidAddress {
        input: address.to_owned(),
        source,
    })?;
    if spec.is_human() {
        return Ok(Address::human());
    }
    let Some(project) = spec.project else {
        return Err(Error::Invalid(format!(
            "write the identity in full, as {address}@PROJECT: a token acts for one mailbox"
        ))
        .into());
    };
    Ok(Address::in_project(spec.handle, project))
}

/// `30d`, `12h`, `90m`, `2w` or a number of seconds.
fn life(s: &str) -> Result<SignedDuration> {
    let t = s.trim();
    let bad = || {
        Error::Invalid(format!(
            "--expires '{s}' is not a duration; write 30d, 12h, 90m, 2w or a number of seconds"
        ))
    };
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let secs = match unit {
        "" | "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86_400),
        "w" => n.checked_mul(7 * 86_400),
        _ => None,
    }
    .ok_or_else(bad)?;
    if secs <= 0 {
        return Err(Error::Invalid(format!("--expires '{s}' is not in the future")).into());
    }
    if secs > MAX_LIFE_DAYS * 86_400 {
        return Err(Error::Invalid(format!(
            "--expires '{s}' is longer than ten years; leave --expires out for a token that does not expire"
        ))
        .into());
    }
    Ok(SignedDuration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::life;

    #[test]
    fn lives_read_as_people_write_them() {
        assert_eq!(life("30d").unwrap().as_secs(), 30 * 86_400);
        assert_eq!(life("12h").unwrap().as_secs(), 12 * 3600);
        assert_eq!(life("90").unwrap().as_secs(), 90);
        for bad in ["", "0d", "-1d", "3y", "d", "99999999999999999999d", "4000d"] {
            assert!(life(bad).is_err(), "{bad}");
        }
    }
}
