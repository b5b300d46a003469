//! `role ADDRESS [--name NAME]`: the SQL that creates a PostgreSQL role acting only as ADDRESS
//! in this mailroom (strict mode). Printed, never run: the operator runs it as the tables' owner.

use anyhow::Result;
use mailroom_core::{Address, AddressSpec, Error, Name};

use crate::context::Ctx;

pub fn role(ctx: &mut Ctx, address: &str, name: Option<&str>) -> Result<()> {
    let spec = AddressSpec::parse(address).map_err(|source| Error::InvalidAddress {
        input: address.to_owned(),
        source,
    })?;
    if spec.is_human() {
        return Err(Error::Invalid(
            "HUMAN is the operator's identity: the operator connects as the owner of mailroom's tables, not as a role made here".into(),
        )
        .into());
    }
    let Some(project) = spec.project else {
        return Err(Error::Invalid(format!(
            "write the identity in full, as {address}@PROJECT: a role acts for one mailbox"
        ))
        .into());
    };
    let address = Address::in_project(spec.handle, project);
    let role = match name {
        Some(n) => Name::parse(n)
            .map_err(|source| Error::InvalidName {
                what: "role",
                input: n.to_owned(),
                source,
            })?
            .as_str()
            .to_ascii_lowercase(),
        None => format!(
            "mr_{}_{}",
            address.handle.as_str().to_ascii_lowercase(),
            address
                .project()
                .map(|p| p.as_str().to_ascii_lowercase())
                .unwrap_or_default()
        ),
    };
    if role.len() > 63 {
        return Err(Error::Invalid(format!(
            "the role name '{role}' is over PostgreSQL's 63 characters; choose one with --name"
        ))
        .into());
    }
    let script = ctx.store.role_script(&address, &role)?;
    crate::outln!("{script}");
    Ok(())
}
