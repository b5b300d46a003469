//! Who a call acts as: the input fields that name the acting member, which a server bound to
//! one identity leaves out of the schemas it lists, and how a call's fields become an address.

use mailroom_core::{Address, Error, Name, Result, Written, read_written};
use serde_json::Value;

use super::{Spec, Tools};
use crate::words::McpWords;

/// The input fields of a tool that name the acting member.
#[derive(Debug)]
pub enum Acting {
    /// These fields (none, for a tool that acts as no one in particular).
    Fields(&'static [&'static str]),
    /// `handle`, and `project_handle`, which also says whose channels: it stays for a server
    /// acting as HUMAN, who has no project of its own.
    InProject,
    /// `project_handle` and `handle`, which on a member's server can only name that member;
    /// a server acting as HUMAN, who puts anyone on any roster, keeps both.
    Member,
}

/// The acting member of most tools.
pub(super) const MEMBER: &[&str] = &["project_handle", "handle"];
/// The acting member of a tool on one's own sent mail.
pub(super) const SENDER: &[&str] = &["project_handle", "sender"];

impl Spec {
    /// The input schema `tools/list` shows a server acting as `identity` (`None`: an
    /// operator's server, which lists every field).
    pub fn input_schema(&self, identity: Option<&Address>) -> Value {
        let mut schema = (self.input)();
        let Some(me) = identity else {
            return schema;
        };
        let left_out: &[&str] = match (&self.acting, me.project()) {
            (Acting::Fields(fields), _) => fields,
            (Acting::InProject, Some(_)) => MEMBER,
            (Acting::InProject, None) => &["handle"],
            (Acting::Member, Some(_)) => MEMBER,
            (Acting::Member, None) => &[],
        };
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            for field in left_out {
                props.remove(*field);
            }
        }
        if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|r| r.as_str().is_none_or(|r| !left_out.contains(&r)));
        }
        schema
    }
}

pub(super) fn name(what: &'static str, s: &str) -> Result<Name> {
    Name::parse(s).map_err(|source| Error::InvalidName {
        what,
        input: s.to_owned(),
        source,
    })
}

impl Tools {
    /// The address `handle` in `project` means (a handle may carry its own `@project`).
    pub(super) fn address(
        &self,
        project: Option<&str>,
        handle: &str,
        field: &str,
    ) -> Result<Address> {
        match read_written(handle, || project.map(|p| name("project", p)).transpose())? {
            Written::Address(a) => self.mr.spelled(&a),
            Written::Bare(_) => Err(Error::Invalid(format!(
                "the {field} '{handle}' needs its project: pass project_handle or write {handle}@PROJECT"
            ))),
        }
    }

    /// Who a call acts as: the server's identity, which the call may name but not change; or on
    /// an operator's server, whoever the call names.
    /// Who acts, for a tool whose input names the acting member the one way every such tool
    /// does ([`args::ActingMember`]).
    pub(super) fn member(&self, a: &impl crate::args::ActingMember) -> Result<Address> {
        self.actor(a.project_handle(), a.handle(), "handle")
    }

    pub(super) fn actor(
        &self,
        project: Option<&str>,
        handle: Option<&str>,
        field: &str,
    ) -> Result<Address> {
        let Some(me) = &self.identity else {
            let Some(h) = handle else {
                return Err(Error::Invalid(format!(
                    "this server acts for any member (an operator's server): name the {field} and its project_handle (HUMAN needs no project)"
                )));
            };
            let named = self.address(project, h, field)?;
            self.mr.check_acts_as(&named)?;
            return Ok(named);
        };
        if handle.is_none() && project.is_none() {
            return Ok(me.clone());
        }
        let default_project = me.project().map(Name::as_str);
        let named = self.address(
            project.or(default_project),
            handle.unwrap_or(me.handle.as_str()),
            field,
        )?;
        if named == *me {
            return Ok(me.clone());
        }
        Err(Error::Refused(format!(
            "this server acts as {me} only, and the call names the {field} {named}; act as yourself, or ask the operator to act for {named}"
        )))
    }

    pub(super) fn words(&self, actor: &Address) -> McpWords {
        McpWords::new(actor, self.identity.is_some())
    }

    /// The project whose channels `me` posts to and reads: its own, or for HUMAN the one named.
    pub(super) fn channel_project(&self, me: &Address, project: Option<&str>) -> Result<Name> {
        match (me.project(), project) {
            (Some(p), _) => Ok(p.clone()),
            (None, Some(p)) => name("project", p),
            (None, None) => Err(Error::Invalid(
                "HUMAN has no project of its own: pass project_handle to say which project's channels".into(),
            )),
        }
    }
}
