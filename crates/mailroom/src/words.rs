//! The command line's words for the next steps a reader can take: the commands to type. They
//! name `--as` and `--home` when those came from flags, because a command copied from the hint
//! into a fresh shell would otherwise act as someone else, or in another home.

use std::path::Path;

use mailroom_core::identity::{Identity, Source};
use mailroom_core::render::Vocabulary;

/// Commands as typed at a shell.
#[derive(Clone, Debug)]
pub struct CliWords {
    /// `mailroom`, plus the flags the reader's context does not imply.
    program: String,
}

impl CliWords {
    pub fn new(identity: Option<&Identity>, home_flag: Option<&Path>) -> CliWords {
        let mut program = String::from("mailroom");
        if let Some(home) = home_flag {
            program.push_str(" --home ");
            program.push_str(&shell_word(&home.display().to_string()));
        }
        if let Some(i) = identity.filter(|i| i.source == Source::Flag) {
            program.push_str(" --as ");
            program.push_str(&shell_word(&i.address.to_string()));
        }
        CliWords { program }
    }

    /// The mailroom command `rest` (`channel read run-42`), with the flags it needs.
    pub fn command(&self, rest: &str) -> String {
        format!("{} {rest}", self.program)
    }
}

/// `s` as one shell word: as it is when it is plain, else single-quoted.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl Vocabulary for CliWords {
    fn reply(&self, id: &str) -> String {
        format!("{} reply {id} --message \"...\"", self.program)
    }

    fn done(&self, id: &str) -> String {
        format!("{} done {id}", self.program)
    }

    fn read(&self, id: &str) -> String {
        format!("{} read {id}", self.program)
    }

    fn inbox(&self) -> String {
        format!("{} inbox", self.program)
    }

    fn doctor(&self) -> String {
        format!("{} doctor", self.program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mailroom_core::Address;

    fn identity(source: Source, address: &str) -> Identity {
        Identity {
            address: Address::parse_canonical(address).unwrap(),
            source,
            origin: None,
        }
    }

    #[test]
    fn hints_name_the_flags_a_copied_command_needs() {
        let implied = CliWords::new(Some(&identity(Source::Env, "api@web")), None);
        assert_eq!(implied.done("01X"), "mailroom done 01X");
        let flag = CliWords::new(
            Some(&identity(Source::Flag, "HUMAN")),
            Some(Path::new("/tmp/my home")),
        );
        assert_eq!(
            flag.reply("01X"),
            "mailroom --home '/tmp/my home' --as HUMAN reply 01X --message \"...\""
        );
    }
}
